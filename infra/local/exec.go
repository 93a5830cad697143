package main

import "errors"

func execCommand(args []string) error { return errors.New("not yet") }
