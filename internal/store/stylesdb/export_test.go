package stylesdb

// SetPageSize caps each Query call, so tests can exercise page-following
// without writing megabytes.
func SetPageSize(d *DB, n int32) { d.pageSize = n }

// SetListScan lowers the rejects one listing reads past.
func SetListScan(d *DB, n int) { d.listScan = n }
