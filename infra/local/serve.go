package main

import "errors"

func serve(args []string) error { return errors.New("not yet") }
