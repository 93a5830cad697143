package sam

import (
	"fmt"
	"testing"
)

// Every function writes JSON lines that Lambda filters at the stack's
// LogLevel (LoggingConfig), so an operator sets the level on deploy rather
// than in code; internal/logging reads it back from AWS_LAMBDA_LOG_LEVEL.
func TestEveryFunctionLogsJSONAtTheLogLevelParameter(t *testing.T) {
	tpl := loadRepoTemplate(t)
	if _, ok := tpl.Parameters["LogLevel"]; !ok {
		t.Fatal("no LogLevel parameter")
	}
	for _, f := range tpl.Functions() {
		lc, ok := tpl.Resources[f.LogicalID].Properties["LoggingConfig"]
		if !ok {
			lc = tpl.Globals.Function["LoggingConfig"]
		}
		m, _ := lc.(map[string]any)
		if m["LogFormat"] != "JSON" || fmt.Sprint(m["ApplicationLogLevel"]) != fmt.Sprint(map[string]any{"Ref": "LogLevel"}) {
			t.Errorf("%s: LoggingConfig %v; want LogFormat JSON and ApplicationLogLevel !Ref LogLevel", f.LogicalID, lc)
		}
	}
}
