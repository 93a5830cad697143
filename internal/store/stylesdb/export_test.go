package stylesdb

import "context"

// SetPageSize caps each Query call, so tests can exercise page-following
// without writing megabytes.
func SetPageSize(d *DB, n int32) { d.pageSize = n }

// SetListScan lowers the rejects one listing reads past.
func SetListScan(d *DB, n int) { d.listScan = n }

// Version is a style's stored version: how many changes of its flags
// landed.
func Version(t interface {
	Helper()
	Fatal(...any)
}, d *DB, id string) int {
	t.Helper()
	it, err := d.readStyle(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return it.Version
}
