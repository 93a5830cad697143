package triggers

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// terminalJobs is the notifier's filter (issue 7): a job's change into a
// terminal status, with a webhook URL.
const terminalJobs = `{"eventName":["MODIFY"],"dynamodb":{"NewImage":{"SK":{"S":["JOB"]},"status":{"S":["completed","failed","cancelled"]},"webhook_url":{"S":[{"exists":true}]}},"OldImage":{"status":{"S":[{"anything-but":["completed","failed","cancelled"]}]}}}}`

// change is a job record of the stream: eventName, the old status ("" for
// none: no OldImage), the new one ("" for a REMOVE), and whether the new
// image has a webhook URL.
func change(eventName, oldStatus, newStatus string, webhook bool) events.DynamoDBEventRecord {
	image := func(status string, webhook bool) map[string]events.DynamoDBAttributeValue {
		if status == "" {
			return nil
		}
		m := map[string]events.DynamoDBAttributeValue{
			"PK":     events.NewStringAttribute("JOB#j1"),
			"SK":     events.NewStringAttribute("JOB"),
			"status": events.NewStringAttribute(status),
			"cost":   events.NewNumberAttribute("300"),
		}
		if webhook {
			m["webhook_url"] = events.NewStringAttribute("https://example.com/hook")
		}
		return m
	}
	return events.DynamoDBEventRecord{
		EventName: eventName, EventSource: "aws:dynamodb", EventVersion: "1.1",
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Unix(1795433400, 0)},
			Keys:                        map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("JOB#j1"), "SK": events.NewStringAttribute("JOB")},
			NewImage:                    image(newStatus, webhook),
			OldImage:                    image(oldStatus, true),
			SequenceNumber:              "000000000000000000042",
			SizeBytes:                   120,
			StreamViewType:              "NEW_AND_OLD_IMAGES",
		},
	}
}

func TestTheNotifierFilter(t *testing.T) {
	filters, err := compileFilters([]string{terminalJobs})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		record events.DynamoDBEventRecord
		want   bool
	}{
		{"processing -> completed with a webhook", change("MODIFY", "processing", "completed", true), true},
		{"queued -> failed with a webhook", change("MODIFY", "queued", "failed", true), true},
		{"processing -> cancelled with a webhook", change("MODIFY", "processing", "cancelled", true), true},
		{"the creation", change("INSERT", "", "queued", true), false},
		{"a creation already terminal", change("INSERT", "", "completed", true), false},
		{"queued -> processing", change("MODIFY", "queued", "processing", true), false},
		{"processing -> completed without a webhook", change("MODIFY", "processing", "completed", false), false},
		{"completed -> failed", change("MODIFY", "completed", "failed", true), false},
		{"completed -> completed (a later write)", change("MODIFY", "completed", "completed", true), false},
		{"a removal", change("REMOVE", "completed", "", true), false},
	} {
		got, err := matchAny(filters, c.record)
		if err != nil || got != c.want {
			t.Errorf("%s: match %v (%v); want %v", c.name, got, err, c.want)
		}
	}
	other := change("MODIFY", "processing", "completed", true)
	other.Change.NewImage["SK"] = events.NewStringAttribute("LEDGER#1")
	if got, _ := matchAny(filters, other); got {
		t.Error("an item other than a job matched")
	}
}

func TestFilterOperators(t *testing.T) {
	// The record, in JSON, is change("MODIFY", "processing", "completed", true).
	record := change("MODIFY", "processing", "completed", true)
	record.AWSRegion = "us-east-1"
	for pattern, want := range map[string]bool{
		`{"eventName":["MODIFY","INSERT"]}`:                       true,
		`{"eventName":["modify"]}`:                                false,
		`{"awsRegion":[{"anything-but":"eu-west-1"}]}`:            true,
		`{"dynamodb":{"SizeBytes":[120]}}`:                        true,
		`{"dynamodb":{"SizeBytes":[120.0]}}`:                      false, // numbers by their text, as in Lambda
		`{"dynamodb":{"SizeBytes":[{"anything-but":[100,200]}]}}`: true,
		`{"dynamodb":{"SizeBytes":[{"anything-but":[120]}]}}`:     false,
		// A DynamoDB number is a string in the record.
		`{"dynamodb":{"NewImage":{"cost":{"N":["300"]}}}}`:               true,
		`{"dynamodb":{"NewImage":{"nothing":{"S":[{"exists":false}]}}}}`: true,
		`{"dynamodb":{"NewImage":{"status":{"S":[{"exists":false}]}}}}`:  false,
		`{"dynamodb":{"NewImage":{"status":[{"exists":true}]}}}`:         false, // exists speaks of leaves only
		`{"dynamodb":{"Missing":{"x":[{"exists":false}]}}}`:              true,
		`{"dynamodb":{"Missing":{"x":["y"]}}}`:                           false,
		`{"userIdentity":[null]}`:                                        false, // absent is not null
	} {
		filters, err := compileFilters([]string{pattern})
		if err != nil {
			t.Errorf("%s: %v", pattern, err)
			continue
		}
		if got, err := matchAny(filters, record); err != nil || got != want {
			t.Errorf("%s: match %v (%v); want %v", pattern, got, err, want)
		}
	}
	// Filters are ORed; no filter passes everything.
	any2, _ := compileFilters([]string{`{"eventName":["INSERT"]}`, `{"eventName":["MODIFY"]}`})
	if got, _ := matchAny(any2, record); !got {
		t.Error("the second of two filters did not let the record through")
	}
	if got, _ := matchAny(nil, record); !got {
		t.Error("no filter dropped a record")
	}
}

func TestFilterPatternsLambdaWouldRefuse(t *testing.T) {
	for pattern, want := range map[string]string{
		`[1]`:                                      "not a JSON object",
		`{"eventName":"MODIFY"}`:                   "eventName: MODIFY must be a list of rules or an object",
		`{"eventName":[]}`:                         "eventName: an empty list of rules matches nothing",
		`{"$or":[{"eventName":["MODIFY"]}]}`:       "$or: $or is not played",
		`{"a":[{"wildcard":"x*"}]}`:                "a: the wildcard operator is not played by the local runner",
		`{"a":[{"cidr":"10.0.0.0/24"}]}`:           "the cidr operator is not played",
		`{"a":[{"exists":"yes"}]}`:                 "exists takes true or false",
		`{"a":[{"anything-but":[]}]}`:              "anything-but takes at least one value",
		`{"a":[{"anything-but":[true]}]}`:          "anything-but takes strings or numbers",
		`{"a":[{"anything-but":{"exists":true}}]}`: "anything-but is played with a value or a list of values only",
		// Lambda takes these; template.yaml does not use them, and the
		// runner says so rather than playing them approximately.
		`{"a":[{"prefix":"JOB#"}]}`:                 "the prefix operator is not played by the local runner",
		`{"a":[{"suffix":"x"}]}`:                    "the suffix operator is not played",
		`{"a":[{"equals-ignore-case":"x"}]}`:        "the equals-ignore-case operator is not played",
		`{"a":[{"numeric":[">",0]}]}`:               "the numeric operator is not played",
		`{"a":[{"anything-but":{"prefix":"us-"}}]}`: "anything-but is played with a value or a list of values only",
		`{"a":[{"prefix":"x","suffix":"y"}]}`:       "a rule object has one operator",
		`{"a":{"b":[["x"]]}}`:                       "a.b: [x] is not a rule",
	} {
		_, err := compileFilters([]string{`{"ok":["x"]}`, pattern})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "FilterCriteria.Filters[1].Pattern: ") {
			t.Errorf("%s: error %v; want %q", pattern, err, want)
		}
	}
}
