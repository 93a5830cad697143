package sam

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// terminalJobsPattern is the notifier's filter: a job's change into a
// terminal status, with a webhook URL.
const terminalJobsPattern = `{"eventName":["MODIFY"],"dynamodb":{"NewImage":{"SK":{"S":["JOB"]},"status":{"S":["completed","failed","cancelled"]},"webhook_url":{"S":[{"exists":true}]}},"OldImage":{"status":{"S":[{"anything-but":["completed","failed","cancelled"]}]}}}}`

func TestDynamoDBEvent(t *testing.T) {
	tpl, err := Load("testdata/notifier.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := function(t, tpl, "NotifierFunction").DynamoDBEvent("TerminalJobs")
	if err != nil {
		t.Fatal(err)
	}
	want := DynamoDBEvent{
		Function: "NotifierFunction", Name: "TerminalJobs", Table: "Table", StartingPosition: TrimHorizon,
		Batching:                   Batching{BatchSize: 10, FunctionResponseTypes: []string{ReportBatchItemFailures}, Enabled: true},
		BisectBatchOnFunctionError: true, MaximumRetryAttempts: 5, MaximumRecordAge: time.Hour,
		OnFailure: "NotifierDLQ", Filters: []string{terminalJobsPattern},
	}
	if fmt.Sprint(ev) != fmt.Sprint(want) || !ev.ReportsBatchItemFailures() {
		t.Errorf("event\n%+v\nwant\n%+v", ev, want)
	}
	table, err := tpl.Table("Table")
	if err != nil || table != (Table{LogicalID: "Table", StreamViewType: "NEW_AND_OLD_IMAGES"}) {
		t.Errorf("table %+v, %v", table, err)
	}
	if q := tpl.Queues(); fmt.Sprint(q) != "[NotifierDLQ]" {
		t.Errorf("queues %v", q)
	}
}

func TestDynamoDBEventDefaults(t *testing.T) {
	tpl := mustParse(t, `
Resources:
  F:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        E:
          Type: DynamoDB
          Properties:
            Stream:
              Fn::GetAtt: [Table, StreamArn]
            StartingPosition: LATEST
            MaximumRecordAgeInSeconds: -1
            Enabled: false
`)
	ev, err := tpl.Functions()[0].DynamoDBEvent("E")
	if err != nil {
		t.Fatal(err)
	}
	want := DynamoDBEvent{Function: "F", Name: "E", Table: "Table", StartingPosition: Latest, Batching: Batching{BatchSize: 100}, MaximumRetryAttempts: -1}
	if fmt.Sprint(ev) != fmt.Sprint(want) || ev.ReportsBatchItemFailures() {
		t.Errorf("Lambda's defaults: %+v; want %+v", ev, want)
	}
	if _, err := tpl.Functions()[0].SQSEvent("E"); err == nil {
		t.Error("a DynamoDB event read as SQS")
	}
}

func TestDynamoDBEventErrors(t *testing.T) {
	const ok = `Stream: !GetAtt T.StreamArn, StartingPosition: TRIM_HORIZON`
	for props, want := range map[string]string{
		`{Stream: "arn:aws:dynamodb:us-east-1:1:table/t/stream/x", StartingPosition: LATEST}`:      "Stream must be !GetAtt <Table>.StreamArn",
		`{Stream: !GetAtt T.Arn, StartingPosition: LATEST}`:                                        "Stream must be !GetAtt <Table>.StreamArn",
		`{Stream: !GetAtt T.StreamArn}`:                                                            "StartingPosition is required",
		`{Stream: !GetAtt T.StreamArn, StartingPosition: AT_TIMESTAMP}`:                            "StartingPosition must be TRIM_HORIZON or LATEST",
		`{` + ok + `, StartingPositionTimestamp: 1}`:                                               "StartingPositionTimestamp is for Kinesis",
		`{` + ok + `, BatchSize: 0}`:                                                               "BatchSize must be 1..10000",
		`{` + ok + `, BatchSize: 10001}`:                                                           "BatchSize must be 1..10000",
		`{` + ok + `, MaximumBatchingWindowInSeconds: 301}`:                                        "MaximumBatchingWindowInSeconds must be 0..300",
		`{` + ok + `, BisectBatchOnFunctionError: "yes"}`:                                          "BisectBatchOnFunctionError must be true or false",
		`{` + ok + `, MaximumRetryAttempts: -2}`:                                                   "MaximumRetryAttempts must be -1..10000",
		`{` + ok + `, MaximumRetryAttempts: 10001}`:                                                "MaximumRetryAttempts must be -1..10000",
		`{` + ok + `, MaximumRecordAgeInSeconds: 59}`:                                              "MaximumRecordAgeInSeconds must be -1 or 60..604800",
		`{` + ok + `, MaximumRecordAgeInSeconds: 0}`:                                               "MaximumRecordAgeInSeconds must be -1 or 60..604800",
		`{` + ok + `, MaximumRecordAgeInSeconds: 604801}`:                                          "MaximumRecordAgeInSeconds must be -1 or 60..604800",
		`{` + ok + `, FunctionResponseTypes: [Other]}`:                                             "FunctionResponseTypes may hold only ReportBatchItemFailures",
		`{` + ok + `, DestinationConfig: {OnFailure: {Destination: "arn:aws:sqs:us-east-1:1:q"}}}`: "Destination must be !GetAtt <Queue>.Arn",
		`{` + ok + `, DestinationConfig: {OnSuccess: {Destination: !GetAtt Q.Arn}}}`:               "DestinationConfig.OnSuccess is not a destination of a stream mapping",
		`{` + ok + `, DestinationConfig: {OnFailure: {Destination: !GetAtt Q.Arn, Type: SNS}}}`:    "an SNS on-failure destination is not played",
		`{` + ok + `, FilterCriteria: {Filters: {Pattern: "{}"}}}`:                                 "FilterCriteria.Filters must be a list",
		`{` + ok + `, FilterCriteria: {Filters: [{Pattern: "eventName"}]}}`:                        "FilterCriteria.Filters[0].Pattern is not a JSON object",
		`{` + ok + `, FilterCriteria: {Filters: [{Pattern: "[1]"}]}}`:                              "FilterCriteria.Filters[0].Pattern is not a JSON object",
		`{` + ok + `, FilterCriteria: {Filters: [{Pattern: "{}"}, {Pattern: "{}"}, {Pattern: "{}"}, {Pattern: "{}"}, {Pattern: "{}"}, {Pattern: "{}"}]}}`: "FilterCriteria has 6 filters; Lambda takes at most 5",
		`{` + ok + `, FilterCriteria: {Filters: [{Pattern: "{\"a\":[\"` + strings.Repeat("x", 4096) + `\"]}"}]}}`:                                         "Lambda takes at most 4096",
		`{` + ok + `, Enabled: 1}`:                  `Enabled must be true or false`,
		`{` + ok + `, ParallelizationFactor: 2}`:    "a ParallelizationFactor above 1 is not played",
		`{` + ok + `, ParallelizationFactor: 11}`:   "ParallelizationFactor must be 1..10",
		`{` + ok + `, TumblingWindowInSeconds: 60}`: "TumblingWindowInSeconds is not played",
	} {
		tpl := mustParse(t, "Resources:\n  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      Events:\n        E:\n          Type: DynamoDB\n          Properties: "+props+"\n")
		_, err := tpl.Functions()[0].DynamoDBEvent("E")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "F event E (DynamoDB): ") {
			t.Errorf("%.120s: error %v; want one naming F, E and %q", props, err, want)
		}
	}
	tpl := mustParse(t, `
Resources:
  Plain:
    Type: AWS::DynamoDB::Table
  Odd:
    Type: AWS::DynamoDB::Table
    Properties:
      StreamSpecification: {StreamViewType: EVERYTHING}
`)
	if table, err := tpl.Table("Plain"); err != nil || table.StreamViewType != "" {
		t.Errorf("a table without a stream: %+v %v", table, err)
	}
	if _, err := tpl.Table("Odd"); err == nil || !strings.Contains(err.Error(), "StreamViewType must be") {
		t.Errorf("a bad view type: %v", err)
	}
	if _, err := tpl.Table("Missing"); err == nil || !strings.Contains(err.Error(), "no AWS::DynamoDB::Table Missing") {
		t.Errorf("a missing table: %v", err)
	}
}
