package sam

import (
	"fmt"
	"strings"
	"testing"
)

const envTemplate = `
Parameters:
  BaseUrl:
    Type: String
    Default: ""
  Stage:
    Type: String
    Default: dev
  NoDefault:
    Type: String
Globals:
  Function:
    Environment:
      Variables:
        TABLE_NAME: !Ref Table
        STAGE: !Ref Stage
Resources:
  Table:
    Type: AWS::DynamoDB::Table
  JobsQueue:
    Type: AWS::SQS::Queue
  F:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          PLAIN: text
          NUMBER: 3
          FLAG: true
          STAGE: !Ref BaseUrl
          QUEUE_URL: !Ref JobsQueue
          QUEUE_ARN: !GetAtt JobsQueue.Arn
          INDEX: !Sub "${Table.Arn}/index/by-${Stage}"
          LOG_GROUP: !Sub /aws/lambda/${F}-${AWS::Region}
          LITERAL: !Sub "${!NotAVar}-${Table}"
          LIST_FORM: !Sub
            - "${Name}@${Stage}"
            - Name: !GetAtt JobsQueue.QueueName
`

func TestEnvResolvesReferences(t *testing.T) {
	tpl := mustParse(t, envTemplate)
	env, err := tpl.Env("F", map[string]string{
		"Table":               "genjobs",
		"Table.Arn":           "arn:aws:dynamodb:us-east-1:000000000000:table/genjobs",
		"JobsQueue":           "http://127.0.0.1:4566/000000000000/genjobs-jobs",
		"JobsQueue.Arn":       "arn:aws:sqs:us-east-1:000000000000:genjobs-jobs",
		"JobsQueue.QueueName": "genjobs-jobs",
		"BaseUrl":             "http://127.0.0.1:3000",
		"F":                   "local-F",
		"AWS::Region":         "us-east-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"TABLE_NAME": "genjobs",
		"STAGE":      "http://127.0.0.1:3000", // the function's own variable beats Globals'
		"PLAIN":      "text",
		"NUMBER":     "3",
		"FLAG":       "true",
		"QUEUE_URL":  "http://127.0.0.1:4566/000000000000/genjobs-jobs",
		"QUEUE_ARN":  "arn:aws:sqs:us-east-1:000000000000:genjobs-jobs",
		"INDEX":      "arn:aws:dynamodb:us-east-1:000000000000:table/genjobs/index/by-dev", // Stage: the parameter's Default
		"LOG_GROUP":  "/aws/lambda/local-F-us-east-1",
		"LITERAL":    "${NotAVar}-genjobs",
		"LIST_FORM":  "genjobs-jobs@dev",
	}
	if fmt.Sprint(env) != fmt.Sprint(want) {
		t.Errorf("env:\n%v\nwant:\n%v", env, want)
	}
}

func TestEnvNamesTheUnresolvedReference(t *testing.T) {
	full := map[string]string{
		"Table": "t", "Table.Arn": "a", "JobsQueue": "u", "JobsQueue.Arn": "qa", "JobsQueue.QueueName": "n",
		"F": "f", "AWS::Region": "r",
	}
	for missing, want := range map[string]string{
		"Table":               "F: environment variable LITERAL: !Sub \"${!NotAVar}-${Table}\": ${Table} has no local value",
		"JobsQueue":           "F: environment variable QUEUE_URL: !Ref JobsQueue has no local value",
		"JobsQueue.Arn":       "F: environment variable QUEUE_ARN: !GetAtt JobsQueue.Arn has no local value",
		"Table.Arn":           "F: environment variable INDEX: !Sub \"${Table.Arn}/index/by-${Stage}\": ${Table.Arn} has no local value",
		"AWS::Region":         "F: environment variable LOG_GROUP: !Sub \"/aws/lambda/${F}-${AWS::Region}\": ${AWS::Region} has no local value",
		"JobsQueue.QueueName": "F: environment variable LIST_FORM: !Sub variable Name: !GetAtt JobsQueue.QueueName has no local value",
	} {
		resolve := map[string]string{}
		for k, v := range full {
			if k != missing {
				resolve[k] = v
			}
		}
		_, err := mustParse(t, envTemplate).Env("F", resolve)
		if err == nil || err.Error() != want {
			t.Errorf("without %s: error %v\nwant %s", missing, err, want)
		}
	}

	tpl := mustParse(t, `
Parameters:
  NoDefault: {Type: String}
Resources:
  G:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          A: !Ref NoDefault
          B: !If [Cond, x, y]
`)
	if _, err := tpl.Env("G", nil); err == nil || err.Error() != "G: environment variable A: !Ref NoDefault has no local value" {
		t.Errorf("parameter without a default: %v", err)
	}
	if _, err := tpl.Env("G", map[string]string{"NoDefault": "v"}); err == nil || !strings.Contains(err.Error(), `variable B: the template has no condition "Cond"`) {
		t.Errorf("Fn::If on a missing condition: %v", err)
	}
	if _, err := tpl.Env("Nope", nil); err == nil || !strings.Contains(err.Error(), "no function Nope") {
		t.Errorf("unknown function: %v", err)
	}
}

// Fn::If and Fn::FindInMap resolve as CloudFormation would, from the
// parameters' values or their defaults: the light lane's queue URL and the
// queues' MaximumConcurrency follow AccountConcurrency so.
func TestEnvResolvesConditionsAndMappings(t *testing.T) {
	tpl := mustParse(t, `
Parameters:
  Tier: {Type: String, Default: "10"}
Mappings:
  Tiers:
    "10": {Workers: 2}
    "100": {Workers: 25}
Conditions:
  Small: !Equals [!Ref Tier, "10"]
  Large: !Not [!Condition Small]
  Both: !And [!Condition Small, !Condition Large]
  Either: !Or [!Condition Small, !Condition Large]
Resources:
  G:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          LANE: !If [Large, !Ref Queue, ""]
          WORKERS: !FindInMap [Tiers, !Ref Tier, Workers]
          BOTH: !If [Both, yes, no]
          EITHER: !If [Either, yes, no]
`)
	for tier, want := range map[string]map[string]string{
		"":    {"LANE": "", "WORKERS": "2", "BOTH": "no", "EITHER": "yes"},
		"100": {"LANE": "q", "WORKERS": "25", "BOTH": "no", "EITHER": "yes"},
	} {
		resolve := map[string]string{"Queue": "q"}
		if tier != "" {
			resolve["Tier"] = tier
		}
		env, err := tpl.Env("G", resolve)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("tier %q: %s = %q, want %q", tier, k, env[k], v)
			}
		}
	}
	if _, err := tpl.Env("G", map[string]string{"Queue": "q", "Tier": "7"}); err == nil || !strings.Contains(err.Error(), "!FindInMap Tiers.7.Workers: the template has no value") {
		t.Errorf("a tier the map lacks: %v", err)
	}
}
