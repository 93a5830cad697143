package endpoints

import (
	"errors"
	"os"
	"os/exec"
	"testing"
)

func TestWriteFindRemove(t *testing.T) {
	root := t.TempDir()
	if _, err := Find(root); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Find with no record: %v, want ErrNotRunning", err)
	}
	want := Stack{PID: os.Getpid(), API: "http://127.0.0.1:3711", DynamoDB: "http://127.0.0.1:8711",
		Fauxqs: "http://127.0.0.1:4711", State: root, DemoToken: root + "/demo-token"}
	if err := Write(root, want); err != nil {
		t.Fatal(err)
	}
	got, err := Find(root)
	if err != nil || got != want {
		t.Fatalf("Find = %+v, %v; want %+v", got, err, want)
	}
	// Another runner's record is not ours to remove.
	if err := Remove(root, os.Getpid()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(root); err != nil {
		t.Fatalf("the record was removed by another process id: %v", err)
	}
	if err := Remove(root, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(root); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Find after Remove: %v, want ErrNotRunning", err)
	}
}

// A runner killed with SIGKILL leaves its record behind: it names a process
// that is gone, and tools must not send requests to its ports.
func TestARecordOfAGoneProcessIsNotRunning(t *testing.T) {
	root := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := Write(root, Stack{PID: cmd.Process.Pid, API: "http://127.0.0.1:3000"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(root); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Find of a gone runner's record: %v, want ErrNotRunning", err)
	}
}
