package testenv

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
)

// Loopback is a connection check for tests (netguard.Guard.Connect): it
// records every address a connection is about to be made to, and fails
// any outside 127.0.0.0/8 and ::1 instead of connecting, so no test sends
// traffic off the machine even when the code under test would. A test
// fails at its end if such a connection was attempted.
type Loopback struct {
	mu   sync.Mutex
	seen []string
	out  []string
}

// LoopbackOnly returns a Loopback that fails t at its end if any connection
// outside loopback was attempted.
func LoopbackOnly(t testing.TB) *Loopback {
	l := &Loopback{}
	t.Cleanup(func() {
		if out := l.Outside(); len(out) > 0 {
			t.Errorf("testenv: connections outside loopback were attempted (and failed): %v", out)
		}
	})
	return l
}

// Connect records address and fails it unless it is on loopback. Its
// signature is netguard.Guard.Connect's.
func (l *Loopback) Connect(network, address string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, network+" "+address)
	if ap, err := netip.ParseAddrPort(address); err == nil && ap.Addr().Unmap().IsLoopback() {
		if a := ap.Addr().Unmap(); a.Is4() || a == netip.IPv6Loopback() {
			return nil
		}
	}
	l.out = append(l.out, network+" "+address)
	return &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("testenv: %s is outside loopback; tests never connect there", address)}
}

// Seen is every address a connection was asked for, in order.
func (l *Loopback) Seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// Outside is the addresses outside loopback that were asked for.
func (l *Loopback) Outside() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.out...)
}
