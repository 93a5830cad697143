//go:build !unix

package main

import (
	"errors"
	"os"
)

// maxRSS needs getrusage(2), which this system does not have.
func maxRSS(*os.ProcessState) (int64, error) {
	return 0, errors.New("peak RSS is measured on Unix systems only")
}
