package sam

import (
	"fmt"
	"strings"
	"testing"
)

// The console's people outlive every delete: the user pool refuses
// DeleteUserPool (deletion protection) and CloudFormation never asks for
// one, not even when the create that made it rolls back (a delete it
// cannot make would leave the stack ROLLBACK_FAILED). Threat protection,
// billed per monthly active user, is off unless the operator asks, and its
// parameter says what it costs.
func TestTheUserPoolOutlivesEveryDeleteAndThreatProtectionIsOptIn(t *testing.T) {
	tpl := loadRepoTemplate(t)
	pool, ok := tpl.Resources["ConsoleUserPool"]
	if !ok {
		t.Fatal("template.yaml has no ConsoleUserPool")
	}
	if pool.Properties["DeletionProtection"] != "ACTIVE" {
		t.Errorf("ConsoleUserPool DeletionProtection %v; want ACTIVE", pool.Properties["DeletionProtection"])
	}
	if pool.DeletionPolicy != "Retain" || pool.UpdateReplacePolicy != "Retain" {
		t.Errorf("ConsoleUserPool DeletionPolicy %q, UpdateReplacePolicy %q; want Retain for both (a protected pool cannot be deleted by a rollback)",
			pool.DeletionPolicy, pool.UpdateReplacePolicy)
	}
	p, ok := tpl.Parameters["ConsoleThreatProtection"]
	if !ok {
		t.Fatal("template.yaml has no ConsoleThreatProtection parameter")
	}
	if fmt.Sprint(p.Default) != "OFF" {
		t.Errorf("ConsoleThreatProtection defaults to %v; want OFF", p.Default)
	}
	addOns, _ := pool.Properties["UserPoolAddOns"].(map[string]any)
	if mode, _ := addOns["AdvancedSecurityMode"].(map[string]any); mode["Ref"] != "ConsoleThreatProtection" {
		t.Errorf("ConsoleUserPool UserPoolAddOns %v; want AdvancedSecurityMode: !Ref ConsoleThreatProtection", pool.Properties["UserPoolAddOns"])
	}
	if !strings.Contains(p.Description, "USD per monthly active user") {
		t.Errorf("ConsoleThreatProtection's description does not name its price: %q", p.Description)
	}
}
