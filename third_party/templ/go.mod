module github.com/a-h/templ

go 1.26.0
