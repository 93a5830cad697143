// Command local runs the whole service on one machine: DynamoDB Local and
// fauxqs as child processes, and the API served the way `sam local start-api`
// serves it, routed by template.yaml.
//
//	go run ./infra/local            serve the API (make run)
//	go run ./infra/local exec -- CMD  start throwaway emulators, run CMD with
//	                                  their endpoints in the environment, stop them
//	go run ./infra/local invoke FN EVENT  run one function's handler on one event
//	                                  against the running stack (make invoke)
//	go run ./infra/local openapi       print the OpenAPI document (for the linter)
package main

import (
	"fmt"
	"os"
)

func main() {
	args := os.Args[1:]
	cmd := "serve"
	if len(args) > 0 {
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
