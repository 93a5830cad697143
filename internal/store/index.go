// Package store is the DynamoDB adapter's core: the table every entity
// lives in, its primitives (Key, Get, PutNew, Transact, ConditionFailed,
// CancelReason, the retry-aware client), and the job with the transactions
// that move it, which the other aggregates build on. One table holds every
// entity, keyed by PK and SK; each item is written by one package:
//
//	entity        PK                 SK                    package
//	job           JOB#<job id>       JOB                   store (pred_* attributes: submissionsdb)
//	job request   JOB#<job id>       REQUEST               store
//	job's person  JOB#<job id>       PERSON                store (jobs-by-filter)
//	idempotency   IDEM#<ws>#<sha256> IDEM                  idempotencydb (put in store's creation transaction)
//	ledger        WS#<ws id>         LEDGER#<kind>#<time>#<id> store (its shape; reservations, settlements), accountsdb (top-ups); read by ledgerdb
//	workspace     WS#<ws id>         WS                    accountsdb (store moves its balance and slot counters, slotsdb reads them)
//	token         TOKEN#<sha256>     TOKEN                 tokensdb
//	token index   WS#<ws id>         TOKEN#<token id>      tokensdb
//	payment       WS#<ws id>         PAYMENT#<payment id>  accountsdb
//	asset         ASSET#<asset id>   ASSET                 assetsdb
//	delivery      JOB#<job id>       WEBHOOK               deliveriesdb
//	style, ...    STYLE#<id>         STYLE, SET#<set>      stylesdb
//	lease         LEASE#<name>       LEASE                 leasedb
//	membership    WS#<ws id>, USER#<user id> MEMBER#<...>  membersdb
//	session       SESSION#<sha256>   SESSION, ONCE#<id>    sessionsdb (and USER#<user id> / SESSION#<sha256>)
//	top-up        WS#<ws id>         TOPUP#<id>            topupsdb (a pending one is on deliveries-due too)
//	throttle      THROTTLE#<sha256>  WINDOW#<start>        throttledb
//
// A job's creation and its end are one transaction each over the job, the
// workspace's balance and slot counters and a ledger entry: one consistency
// boundary, so those writes live here (transition.go), with the shapes of
// the items they put (the ledger entry's here, the Idempotency-Key's in
// package idempotencydb, below this one). The reads of each other idea
// are its own package's: the ledger and its audit (ledgerdb), the slot
// counters (slotsdb). An aggregate package's DB embeds a *Store, so that a
// consumer that needs its items and the job's gets both from one value.
// The table's definition, for the local stack and the tests, is package
// schema.
package store

import "hash/fnv"

// Index names; template.yaml declares the same (a test compares them).
const (
	IndexJobsByWorkspace = "jobs-by-workspace"
	IndexJobsByStatus    = "jobs-by-status"
	IndexStylesBySet     = "styles-by-set"  // package stylesdb
	IndexDeliveriesDue   = "deliveries-due" // package deliveriesdb: pending webhook deliveries by due time
	IndexJobsByFilter    = "jobs-by-filter" // a workspace's jobs of one endpoint, source or person (jobpages.go)
)

// The partitions more than one aggregate writes in: a workspace's
// (WS#<id>: its item, tokens, payments, ledger, members, top-ups), a
// job's (JOB#<id>: its item, request, webhook delivery) and a person's
// (USER#<user id>: their memberships, their sessions' list).
func WorkspacePK(ws string) string { return "WS#" + ws }
func JobPK(id string) string       { return "JOB#" + id }
func UserPK(user string) string    { return "USER#" + user }

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
