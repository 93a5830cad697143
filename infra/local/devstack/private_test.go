package devstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"genjobs/infra/local/devstack"
	"genjobs/internal/job"
)

// With ALLOW_PRIVATE_DESTINATIONS=false the local stack refuses private
// destinations as AWS does by default: an image input at any spelling of
// this machine fails input_blocked, and the listener there sees no
// connection.
func TestPrivateDestinationsRefusedWhenNotAllowed(t *testing.T) {
	_, api, st, token := servedStack(t, true, func(s *devstack.Stack) { s.AllowPrivateDestinations = false })
	var accepted atomic.Int32
	listen := func(addr string) string {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen on %s: %v", addr, err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	}
	p4 := listen("127.0.0.1:0")
	p6 := listen("[::1]:0")
	hosts := map[string]string{
		"127.0.0.1:" + p4: "", "localhost:" + p4: "", "[::1]:" + p6: "", "[::ffff:127.0.0.1]:" + p4: "",
		"2130706433:" + p4: "", "127.1:" + p4: "",
	}
	for host := range hosts {
		body := `{"width":64,"height":64,"image_url":"http://` + host + `/a.png","model":"Standard V2"}`
		req, _ := http.NewRequest("POST", api.URL+"/generate/enhance/vendor-a/standard-enhance", bytes.NewReader([]byte(body)))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			ID string `json:"job_id"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&rec)
		resp.Body.Close()
		if resp.StatusCode != 200 || rec.ID == "" {
			t.Fatalf("%s: create answered %d", host, resp.StatusCode)
		}
		hosts[host] = rec.ID
	}
	deadline := time.Now().Add(60 * time.Second)
	for host, id := range hosts {
		for {
			j, err := st.Job(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if j.Status.Terminal() {
				if j.Status != job.Failed || j.Error == nil || j.Error.Code != job.CodeInputBlocked {
					t.Errorf("%s: %s %+v; want failed input_blocked", host, j.Status, j.Error)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still %s after 60 s", host, j.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the listeners saw %d connections; want none", n)
	}
}
