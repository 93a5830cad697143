package sam

import (
	"testing"
)

func TestParseExpandsShortForms(t *testing.T) {
	tpl, err := Parse([]byte(`
Resources:
  F:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          A: !Ref Table
          B: !GetAtt Queue.Arn
          C: !Sub "x-${Api}"
          D: !If [Cond, !Ref X, !Ref Y]
`))
	if err != nil {
		t.Fatal(err)
	}
	env := tpl.Functions()[0].Environment
	if ref, _ := env["A"].(map[string]any); ref["Ref"] != "Table" {
		t.Errorf("!Ref became %#v", env["A"])
	}
	if ga, _ := env["B"].(map[string]any); len(ga["Fn::GetAtt"].([]any)) != 2 {
		t.Errorf("!GetAtt became %#v", env["B"])
	}
	if sub, _ := env["C"].(map[string]any); sub["Fn::Sub"] != "x-${Api}" {
		t.Errorf("!Sub became %#v", env["C"])
	}
	if cond, _ := env["D"].(map[string]any); len(cond["Fn::If"].([]any)) != 3 {
		t.Errorf("!If became %#v", env["D"])
	}
}
