package store

// SetPageSize caps each Query call, so tests can exercise page-following
// without writing megabytes.
func SetPageSize(s *Store, n int32) { s.pageSize = n }

func SetListScan(s *Store, n int) { s.listScan = n }
