// Command local runs the whole service on one machine: DynamoDB Local and
// fauxqs as child processes, and the API served the way `sam local start-api`
// serves it, routed by template.yaml.
//
//	go run ./infra/local [-v] [-state DIR]  serve the API (make run); -v logs
//	                                  every request, -state keeps the data in
//	                                  DIR rather than .local/
//	go run ./infra/local exec -- CMD  start throwaway emulators, run CMD with
//	                                  their endpoints in the environment, stop them
//	go run ./infra/local invoke FN EVENT  run one function's handler on one event
//	                                  against the running stack (make invoke)
//	go run ./infra/local openapi       print the OpenAPI document (for the linter)
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	args := os.Args[1:]
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") { // flags alone are serve's: go run ./infra/local -v
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(args)
	case "exec":
		err = execCommand(args)
	case "invoke":
		err = invoke(args)
	case "openapi":
		err = printOpenAPI(args)
	default:
		err = fmt.Errorf("unknown command %q (serve, exec, invoke, openapi)", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "local:", err)
		os.Exit(1)
	}
}
