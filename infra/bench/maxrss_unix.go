//go:build unix

package main

import (
	"errors"
	"os"
	"runtime"
	"syscall"
)

// maxRSS is a finished process's peak resident set in bytes, from
// getrusage(2): ru_maxrss is in KiB on Linux and the BSDs, in bytes on macOS.
func maxRSS(ps *os.ProcessState) (int64, error) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0, errors.New("no rusage for the child process")
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss), nil
	}
	return int64(ru.Maxrss) * 1024, nil
}
