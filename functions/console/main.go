// Command console is the Console Lambda function: the web application's
// settings pages; internal/app/consolefn wires it.
package main

import (
	"genjobs/internal/app"
	"genjobs/internal/app/consolefn"
)

func main() { app.Start("console", app.Function{HTTP: consolefn.Build}) }
