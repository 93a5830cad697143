package provider_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"genjobs/internal/clock"
	"genjobs/internal/metrics"
	"genjobs/internal/provider"
	"genjobs/internal/provider/providertest"
	"genjobs/internal/provider/replicate"
)

// ProviderLatency, charted on the dashboard, is written for every request
// to a provider, by the route's model, a failed one too; Cog's read, which
// makes no request, is not counted.
func TestEveryProviderRequestIsTimedByModel(t *testing.T) {
	rep := providertest.NewReplicate(t)
	var out bytes.Buffer
	c := provider.Timed(replicate.New(&http.Client{Timeout: 5 * time.Second}), metrics.New(&out, "provider", clock.System{}))
	route := &provider.Route{Endpoint: imageEndpoint, Provider: provider.Replicate, BaseURL: rep.URL, Model: "acme/photo-e"}
	secret := provider.Secret{Token: rep.Token}
	ctx := context.Background()
	p, err := c.Submit(ctx, route, secret, provider.Submission{JobID: "job-1", Input: map[string]any{"prompt": "a fox"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(ctx, route, secret, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(ctx, route, provider.Secret{Token: "wrong"}, p.ID); err == nil {
		t.Fatal("a read with a wrong token succeeded")
	}
	sc := bufio.NewScanner(&out)
	n := 0
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if _, ok := line[metrics.ProviderLatency].(float64); !ok || line["Model"] != "model-e-4" || line["Function"] != "provider" {
			t.Errorf("line %s; want ProviderLatency of model-e-4", sc.Bytes())
		}
		n++
	}
	if n != 3 {
		t.Errorf("%d ProviderLatency lines; want one per request, 3", n)
	}
}
