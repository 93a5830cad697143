// Package store is the DynamoDB adapter: the only code that speaks to the
// table. One table holds every entity, keyed by PK and SK:
//
//	entity       PK                 SK                    indexes
//	job          JOB#<job id>       JOB                   jobs-by-workspace (GSI1), jobs-by-status (GSI2, non-terminal only)
//	workspace    WS#<ws id>         WS                    (balance and limits live on it: one conditional write)
//	token        TOKEN#<sha256>     TOKEN                 (the lookup of every request)
//	token index  WS#<ws id>         TOKEN#<token id>      (revocation by id)
//	payment      WS#<ws id>         PAYMENT#<payment id>  (top-up idempotency)
//	ledger       WS#<ws id>         LEDGER#<time>#<id>    (every balance movement)
//	asset        ASSET#<asset id>   ASSET                 (an uploaded image's record; its bytes are in S3)
//	delivery     JOB#<job id>       WEBHOOK               deliveries-due (GSI4, pending only: DUE#<shard> / <next attempt>#<job id>)
//
// The styles' keys are described in styles.go; the table's definition, for
// the local stack and the tests, is package schema.
package store

// Index names; template.yaml declares the same (a test compares them).
const (
	IndexJobsByWorkspace = "jobs-by-workspace"
	IndexJobsByStatus    = "jobs-by-status"
	IndexStylesBySet     = "styles-by-set"  // styles.go
	IndexDeliveriesDue   = "deliveries-due" // deliveries.go: pending webhook deliveries by due time
)
