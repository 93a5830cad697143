module genjobs/client

go 1.25.0
