// Command mcp is the MCP Lambda function: POST /mcp, the API as Model
// Context Protocol tools; internal/app/mcpfn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/mcpfn"
)

func main() { app.Start("mcp", app.Function{HTTP: mcpfn.Build}) }
