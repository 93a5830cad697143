package sam

import (
	"fmt"
	"strconv"
	"testing"
)

// newAccountConcurrency is the Lambda concurrency AWS gives a new account
// ("Concurrent executions" in Service Quotas).
const newAccountConcurrency = 10

// apiRoom is what the queues' pollers, the stream's and the schedule's
// functions must leave of an account's concurrency to the API's functions:
// 2 on a new account (an MCP tool's wait holds one for up to 20 s, the
// other serves every other request), a fifth above.
func apiRoom(concurrency int) int { return max(2, concurrency/5) }

// The functions that run without a request, at the most each tier of
// AccountConcurrency lets them, leave the API its room: a first deploy on a
// new account is not throttled by its own queues (a throttled invocation
// counts as a receive of its messages), and every tier after a quota
// increase keeps the same shape. Counted: each SQS mapping's
// MaximumConcurrency, unless its queue is fed by nobody at that tier (the
// light lane folded into the heavy one), one instance per stream mapping
// and shard (ParallelizationFactor, of a stream of one shard), one per
// schedule.
func TestTheDefaultsFitTheAccountsConcurrency(t *testing.T) {
	tpl := loadRepoTemplate(t)
	tiers := []string{strconv.Itoa(newAccountConcurrency)}
	if p, ok := tpl.Parameters["AccountConcurrency"]; ok {
		if fmt.Sprint(p.Default) != tiers[0] {
			t.Errorf("AccountConcurrency defaults to %v; a first deploy must fit a new account's %d", p.Default, newAccountConcurrency)
		}
		tiers = tiers[:0]
		for _, v := range p.AllowedValues {
			tiers = append(tiers, fmt.Sprint(v))
		}
	}
	lightURL := tpl.Globals.Function["Environment"].(map[string]any)["Variables"].(map[string]any)["LIGHT_JOBS_QUEUE_URL"]
	for _, tier := range tiers {
		budget, err := strconv.Atoi(tier)
		if err != nil {
			t.Fatalf("AccountConcurrency %q is not a number", tier)
		}
		resolve := map[string]string{"AccountConcurrency": tier, "LightJobsQueue": "light"}
		light, err := tpl.Value(lightURL, resolve)
		if err != nil {
			t.Fatal(err)
		}
		used, parts := 0, ""
		for _, f := range tpl.Functions() {
			for _, name := range sortedKeys(f.Events) {
				ev := f.Events[name]
				n := 0
				switch ev.Type {
				case EventSQS:
					if q, _, _ := getAtt(ev.Properties["Queue"]); q == "LightJobsQueue" && light == "" {
						continue
					}
					sc, _ := ev.Properties["ScalingConfig"].(map[string]any)
					v, err := tpl.Value(sc["MaximumConcurrency"], resolve)
					if err != nil {
						t.Fatalf("%s %s: MaximumConcurrency: %v", f.LogicalID, name, err)
					}
					if n, err = strconv.Atoi(v); err != nil || n < 2 || n > 1000 {
						t.Errorf("AccountConcurrency %s: %s %s's MaximumConcurrency is %q; SQS takes 2 to 1000", tier, f.LogicalID, name, v)
					}
				case EventDynamoDB:
					n = 1
					if v, ok := ev.Properties["ParallelizationFactor"]; ok {
						n, _ = strconv.Atoi(fmt.Sprint(v))
					}
				case EventSchedule:
					n = 1
				default:
					continue
				}
				used += n
				parts += fmt.Sprintf(" %s %d", f.LogicalID, n)
			}
		}
		if room := budget - used; room < apiRoom(budget) {
			t.Errorf("AccountConcurrency %s: the functions without requests may run %d at once (%s), leaving the API %d; it needs %d",
				tier, used, parts[1:], room, apiRoom(budget))
		}
	}
}
