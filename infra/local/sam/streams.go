package sam

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// EventDynamoDB is the type of a function's event on a DynamoDB stream.
const EventDynamoDB = "DynamoDB"

// Starting positions of a stream mapping.
const (
	TrimHorizon = "TRIM_HORIZON" // the oldest record the stream keeps
	Latest      = "LATEST"       // records written after the mapping starts
)

// Lambda's limits on a stream mapping's filters.
const (
	MaxFilters       = 5    // filters per mapping (the default quota)
	MaxFilterPattern = 4096 // characters of one pattern
)

// DynamoDBEvent is a DynamoDB stream event source mapping: a function's event
// of type DynamoDB. Its fields are SAM's properties of the same names, with
// Lambda's defaults filled in.
type DynamoDBEvent struct {
	Function string // the function's logical id
	Name     string // the event's name under Events
	Table    string // the table's logical id, from Stream: !GetAtt <Table>.StreamArn
	// StartingPosition is TrimHorizon or Latest; CloudFormation requires it.
	StartingPosition string
	Batching
	// BisectBatchOnFunctionError splits a failed batch in two and retries
	// each half; splitting does not count as a retry.
	BisectBatchOnFunctionError bool
	// MaximumRetryAttempts bounds the retries of a failed batch: 0..10000,
	// or -1 (the default) for retries until the records expire.
	MaximumRetryAttempts int
	// MaximumRecordAge discards records older than this before an
	// invocation: 60 s..7 days, or 0 (MaximumRecordAgeInSeconds: -1, the
	// default) for records of any age the stream keeps.
	MaximumRecordAge time.Duration
	// OnFailure is the logical id of the SQS queue that gets a record of
	// every batch discarded, from DestinationConfig.OnFailure.Destination:
	// !GetAtt <Queue>.Arn; "" without one.
	OnFailure string
	// Filters are the FilterCriteria's patterns, as written: JSON objects.
	// A record is delivered when it matches any of them; with none, every
	// record is.
	Filters []string
}

// Table is an AWS::DynamoDB::Table resource, as far as its stream goes.
type Table struct {
	LogicalID string
	// StreamViewType is the stream's view (NEW_AND_OLD_IMAGES, ...); "" for
	// a table without a stream.
	StreamViewType string
}

// Table reads the AWS::DynamoDB::Table resource logicalID.
func (t *Template) Table(logicalID string) (Table, error) {
	r, ok := t.Resources[logicalID]
	if !ok || r.Type != "AWS::DynamoDB::Table" {
		return Table{}, fmt.Errorf("template has no AWS::DynamoDB::Table %s", logicalID)
	}
	out := Table{LogicalID: logicalID}
	if spec, ok := r.Properties["StreamSpecification"].(map[string]any); ok {
		out.StreamViewType, _ = spec["StreamViewType"].(string)
		switch out.StreamViewType {
		case "KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES":
		default:
			return Table{}, fmt.Errorf("table %s: StreamSpecification.StreamViewType must be KEYS_ONLY, NEW_IMAGE, OLD_IMAGE or NEW_AND_OLD_IMAGES, not %v", logicalID, spec["StreamViewType"])
		}
	}
	return out, nil
}

// DynamoDBEvent reads the function's event name, which must be of type
// DynamoDB. It refuses what SAM or CloudFormation would refuse on deploy,
// and the properties the local runner does not play (ParallelizationFactor
// above 1, TumblingWindowInSeconds, an SNS destination) rather than play
// them approximately.
func (f Function) DynamoDBEvent(name string) (DynamoDBEvent, error) {
	ev, ok := f.Events[name]
	if !ok || ev.Type != EventDynamoDB {
		return DynamoDBEvent{}, fmt.Errorf("%s has no DynamoDB event %s", f.LogicalID, name)
	}
	r := &props{p: ev.Properties, where: fmt.Sprintf("%s event %s (DynamoDB)", f.LogicalID, name)}
	out := DynamoDBEvent{Function: f.LogicalID, Name: name, Batching: Batching{BatchSize: 100, Enabled: true}, MaximumRetryAttempts: -1}
	p := r.p
	table, attr, ok := getAtt(p["Stream"])
	if !ok || attr != "StreamArn" {
		r.fail("Stream must be !GetAtt <Table>.StreamArn of a table of the template, not %v", p["Stream"])
	}
	out.Table = table
	switch v := p["StartingPosition"]; v {
	case TrimHorizon, Latest:
		out.StartingPosition = v.(string)
	case nil:
		r.fail("StartingPosition is required: TRIM_HORIZON or LATEST")
	default:
		r.fail("StartingPosition must be TRIM_HORIZON or LATEST, not %v", v)
	}
	r.batchSize(&out.Batching)
	r.boolean("BisectBatchOnFunctionError", &out.BisectBatchOnFunctionError)
	r.integer("MaximumRetryAttempts", -1, 10000, &out.MaximumRetryAttempts)
	if v, ok := p["MaximumRecordAgeInSeconds"]; ok {
		n, err := integer(v)
		switch {
		case err != nil || n != -1 && (n < 60 || n > 604800):
			r.fail("MaximumRecordAgeInSeconds must be -1 or 60..604800, not %v", v)
		case n > 0:
			out.MaximumRecordAge = time.Duration(n) * time.Second
		}
	}
	r.responseTypes(&out.Batching)
	if v, ok := p["DestinationConfig"]; ok {
		dest, err := onFailure(v)
		if err != nil {
			r.fail("%v", err)
		}
		out.OnFailure = dest
	}
	if v, ok := p["FilterCriteria"]; ok {
		filters, err := filterPatterns(v)
		if err != nil {
			r.fail("%v", err)
		}
		out.Filters = filters
	}
	r.boolean("Enabled", &out.Enabled)
	factor := 1
	r.integer("ParallelizationFactor", 1, 10, &factor)
	if factor != 1 {
		// Concurrent batches per shard, ordered by partition key:
		// playing it as 1 would hide the reordering it allows.
		r.fail("a ParallelizationFactor above 1 is not played by the local runner")
	}
	if _, ok := p["TumblingWindowInSeconds"]; ok {
		r.fail("TumblingWindowInSeconds is not played by the local runner")
	}
	if _, ok := p["StartingPositionTimestamp"]; ok {
		r.fail("StartingPositionTimestamp is for Kinesis (AT_TIMESTAMP); a DynamoDB stream starts at TRIM_HORIZON or LATEST")
	}
	if r.err != nil {
		return DynamoDBEvent{}, r.err
	}
	return out, nil
}

// onFailure reads DestinationConfig: {OnFailure: {Destination: !GetAtt
// <Queue>.Arn, Type: SQS}} and returns the queue's logical id.
func onFailure(v any) (string, error) {
	cfg, _ := v.(map[string]any)
	if cfg == nil {
		return "", fmt.Errorf("DestinationConfig must be a map with OnFailure, not %v", v)
	}
	for k := range cfg {
		if k != "OnFailure" {
			return "", fmt.Errorf("DestinationConfig.%s is not a destination of a stream mapping (only OnFailure is)", k)
		}
	}
	of, _ := cfg["OnFailure"].(map[string]any)
	if of == nil {
		return "", fmt.Errorf("DestinationConfig.OnFailure must be a map with Destination, not %v", cfg["OnFailure"])
	}
	switch t := of["Type"]; t {
	case nil, "SQS":
	case "SNS":
		return "", fmt.Errorf("an SNS on-failure destination is not played by the local runner; use an SQS queue")
	default:
		return "", fmt.Errorf("DestinationConfig.OnFailure.Type must be SQS or SNS, not %v", t)
	}
	queue, attr, ok := getAtt(of["Destination"])
	if !ok || attr != "Arn" {
		return "", fmt.Errorf("DestinationConfig.OnFailure.Destination must be !GetAtt <Queue>.Arn of a queue of the template, not %v", of["Destination"])
	}
	return queue, nil
}

// filterPatterns reads FilterCriteria: {Filters: [{Pattern: '<JSON>'}]}.
// Each pattern must be a JSON object; what its rules mean is package
// triggers' business.
func filterPatterns(v any) ([]string, error) {
	fc, _ := v.(map[string]any)
	if fc == nil {
		return nil, fmt.Errorf("FilterCriteria must be a map with Filters, not %v", v)
	}
	list, ok := fc["Filters"].([]any)
	if !ok {
		return nil, fmt.Errorf("FilterCriteria.Filters must be a list, not %v", fc["Filters"])
	}
	if len(list) > MaxFilters {
		return nil, fmt.Errorf("FilterCriteria has %d filters; Lambda takes at most %d", len(list), MaxFilters)
	}
	var out []string
	for i, raw := range list {
		f, _ := raw.(map[string]any)
		pattern, ok := f["Pattern"].(string)
		if !ok {
			return nil, fmt.Errorf("FilterCriteria.Filters[%d] must be {Pattern: '<JSON>'}, not %v", i, raw)
		}
		if len(pattern) > MaxFilterPattern {
			return nil, fmt.Errorf("FilterCriteria.Filters[%d].Pattern has %d characters; Lambda takes at most %d", i, len(pattern), MaxFilterPattern)
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(pattern), &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("FilterCriteria.Filters[%d].Pattern is not a JSON object: %s", i, strings.TrimSpace(pattern))
		}
		out = append(out, pattern)
	}
	return out, nil
}

// Queues lists the logical ids of the template's AWS::SQS::Queue resources,
// sorted.
func (t *Template) Queues() []string {
	var out []string
	for id, r := range t.Resources {
		if r.Type == "AWS::SQS::Queue" {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
