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
// The styles' keys are described in package stylesdb; the table's definition, for
// the local stack and the tests, is package schema.
package store

import "hash/fnv"

// Index names; template.yaml declares the same (a test compares them).
const (
	IndexJobsByWorkspace = "jobs-by-workspace"
	IndexJobsByStatus    = "jobs-by-status"
	IndexStylesBySet     = "styles-by-set"  // package stylesdb
	IndexDeliveriesDue   = "deliveries-due" // package deliveriesdb: pending webhook deliveries by due time
)

// The partitions more than one aggregate writes in: a workspace's
// (WS#<id>: its item, tokens, payments, ledger, console records) and a
// job's (JOB#<id>: its item, request, webhook delivery).
func WorkspacePK(ws string) string { return "WS#" + ws }
func JobPK(id string) string       { return "JOB#" + id }

// Shards is how many partitions the indexes that list across workspaces
// (jobs-by-status, deliveries-due) spread their items over, by a hash of
// the workspace: no one partition takes every workspace's writes, while
// one workspace's jobs of a status (at most max_concurrent) stay in one
// shard, where its backlog is one Query.
const Shards = 16

// Shard is workspace ws's shard of those indexes.
func Shard(ws string) int {
	h := fnv.New32a()
	h.Write([]byte(ws))
	return int(h.Sum32() % Shards)
}
