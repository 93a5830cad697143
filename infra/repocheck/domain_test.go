package repocheck

import (
	"os/exec"
	"strings"
	"testing"
)

// domain are the packages that decide what happens to a job (the domain
// packages and the runners of the event functions): they reach AWS only
// through small interfaces of their own, which the wiring
// (internal/app/<name>fn) fills with the adapters, through a shim where an
// adapter's types differ (docs/architecture.md, "The code").
var domain = []string{"job", "catalog", "billing", "lifecycle", "style", "worker", "provider", "webhook", "sweeper"}

// adapterPackages are what domain packages must not link: the adapters and
// the AWS SDK beneath them.
var adapterPackages = []string{
	"genjobs/internal/store", "genjobs/internal/queue", "genjobs/internal/blob", "genjobs/internal/signing",
	"genjobs/internal/secrets", "genjobs/internal/awsclient",
	"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go",
}

func TestDomainPackagesLinkNoAdapter(t *testing.T) {
	root, _ := repository(t)
	for _, pkg := range domain {
		cmd := exec.Command("go", "list", "-deps", "./internal/"+pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps ./internal/%s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, a := range adapterPackages {
				if dep == a || strings.HasPrefix(dep, a+"/") {
					t.Errorf("internal/%s links %s: declare what it needs as an interface and adapt the adapter in its wiring", pkg, dep)
				}
			}
		}
	}
}
