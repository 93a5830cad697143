package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }

type item = map[string]types.AttributeValue

// padded is an item of size bytes: keys PK and SK, and "pad".
func padded(pk, sk string, size int, extra item) item {
	it := item{"PK": str(pk), "SK": str(sk)}
	for k, v := range extra {
		it[k] = v
	}
	it["pad"] = str(strings.Repeat("x", size-itemSize(it)-len("pad")))
	return it
}

// Item sizes as AWS's developer guide counts them ("Item sizes and
// formats"): names and values, strings in UTF-8, numbers by significant
// digits, 3 bytes of a list or map plus 1 a member.
func TestItemSizeByAWSRules(t *testing.T) {
	for _, c := range []struct {
		name string
		it   item
		want int
	}{
		{"a string", item{"name": str("Amazon")}, 4 + 6},
		{"UTF-8 bytes, not runes", item{"city": str("Zürich")}, 4 + 7},
		{"a number of six digits", item{"n": num("123456")}, 1 + 4},
		{"leading and trailing zeros are not significant", item{"n": num("000120.500")}, 1 + 3},
		{"a negative number, one more", item{"n": num("-1.5")}, 1 + 3},
		{"zero", item{"n": num("0")}, 1 + 1},
		{"a boolean and a null", item{"b": &types.AttributeValueMemberBOOL{Value: true}, "z": &types.AttributeValueMemberNULL{Value: true}}, 2 + 2},
		{"an empty map", item{"m": &types.AttributeValueMemberM{Value: item{}}}, 1 + 3},
		{"a map: 3, and 1 a member with its name", item{"m": &types.AttributeValueMemberM{Value: item{"a": str("xy")}}}, 1 + 3 + 1 + 1 + 2},
		{"a list: 3, and 1 a member", item{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{str("ab"), num("7")}}}, 1 + 3 + 1 + 2 + 1 + 2},
	} {
		if got := itemSize(c.it); got != c.want {
			t.Errorf("%s: %d bytes; want %d", c.name, got, c.want)
		}
	}
}

// The guide's own examples of units ("Read/write capacity mode"): an item
// of 2 KB takes 2 WRU to write, 4 in a transaction; an item of 8 KB takes
// 2 RRU to read strongly consistent, 1 eventually consistent. An item of a
// few bytes still takes 1 WRU; a read of 3.5 KB is one of 4 KB.
func TestUnitsByAWSRules(t *testing.T) {
	two := padded("P", "S", 2048, nil)
	if got := itemWriteUnits(nil, two); got != 2 {
		t.Errorf("writing 2 KB: %v WRU; want 2", got)
	}
	if got := billWrite([]string{"PK", "SK"}, nil, nil, two, true); got.table != 4 || got.index != 0 {
		t.Errorf("writing 2 KB in a transaction: %+v; want 4 WRU", got)
	}
	if got := itemWriteUnits(nil, item{"PK": str("a")}); got != 1 {
		t.Errorf("writing 3 bytes: %v WRU; want 1", got)
	}
	if got := writeUnits(1025); got != 2 {
		t.Errorf("1025 bytes: %v WRU; want 2 (rounded up per KB)", got)
	}
	if got := readUnits(8192, true); got != 2 {
		t.Errorf("reading 8 KB strongly consistent: %v RRU; want 2", got)
	}
	if got := readUnits(8192, false); got != 1 {
		t.Errorf("reading 8 KB eventually consistent: %v RRU; want 1", got)
	}
	if got := readUnits(3584, true); got != 1 {
		t.Errorf("reading 3.5 KB: %v RRU; want 1", got)
	}
	// BatchGetItem rounds each item: 1.5 KB and 6.5 KB are 4 KB + 8 KB, 3 RRU;
	// a Query rounds its sum once: 40.8 KB is 44 KB, 11 RRU.
	if got := readUnits(1536, true) + readUnits(6656, true); got != 3 {
		t.Errorf("BatchGetItem of 1.5 KB and 6.5 KB: %v RRU; want 3", got)
	}
	if got := readUnits(41779, true); got != 11 {
		t.Errorf("a Query returning 40.8 KB: %v RRU; want 11", got)
	}
}

// An update or a put costs the larger of the item before and after it; a
// delete costs the item it removed.
func TestAWriteCostsTheLargerImage(t *testing.T) {
	small, big := padded("P", "S", 900, nil), padded("P", "S", 3000, nil)
	for _, c := range []struct {
		name          string
		before, after item
		want          float64
	}{
		{"growing 0.9 KB to 2.9 KB", small, big, 3},
		{"shrinking 2.9 KB to 0.9 KB", big, small, 3},
		{"deleting 2.9 KB", big, nil, 3},
		{"creating 0.9 KB", nil, small, 1},
	} {
		if got := itemWriteUnits(c.before, c.after); got != c.want {
			t.Errorf("%s: %v WRU; want %v", c.name, got, c.want)
		}
	}
}

// The guide's index rules ("Provisioned throughput considerations for
// global secondary indexes"): a write that gives an item the index's key
// puts an entry (1 write); one that changes the key deletes and puts (2);
// one that removes the key deletes (1); one that changes only a projected
// attribute updates (1); a write touching neither the key nor a projected
// attribute, or of an item in the index neither before nor after, costs
// the index nothing. An entry is its keys and the projected attributes,
// rounded up per KB on its own, whatever the item's size.
func TestIndexWritesByAWSRules(t *testing.T) {
	keys := []string{"PK", "SK"}
	g := gsi{name: "jobs-by-status", pk: "GSI2PK", sk: "GSI2SK", projection: types.ProjectionTypeInclude, include: []string{"status"}}
	queued := padded("JOB#1", "JOB", 3000, item{"GSI2PK": str("STATUS#queued#03"), "GSI2SK": str("ws#t1"), "status": str("queued")})
	running := padded("JOB#1", "JOB", 3000, item{"GSI2PK": str("STATUS#running#03"), "GSI2SK": str("ws#t1"), "status": str("running")})
	ended := padded("JOB#1", "JOB", 3000, item{"status": str("completed")})
	progressed := padded("JOB#1", "JOB", 3000, item{"GSI2PK": str("STATUS#running#03"), "GSI2SK": str("ws#t1"), "status": str("running"), "progress": num("40")})
	relabelled := padded("JOB#1", "JOB", 3000, item{"GSI2PK": str("STATUS#running#03"), "GSI2SK": str("ws#t1"), "status": str("sampling")})
	for _, c := range []struct {
		name          string
		before, after item
		want          float64
	}{
		{"a new item in the index", nil, queued, 1},
		{"its key changed", queued, running, 2},
		{"its key removed", running, ended, 1},
		{"a projected attribute changed", running, relabelled, 1},
		{"an attribute the index does not project", running, progressed, 0},
		{"in the index neither before nor after", ended, ended, 0},
		{"deleted from the index", queued, nil, 1},
	} {
		if got := indexWriteUnits(g, keys, c.before, c.after); got != c.want {
			t.Errorf("%s: %v index writes; want %v", c.name, got, c.want)
		}
	}
	// The 3 KB item costs its table 3 WRU, doubled in a transaction; the
	// index entry, a few dozen bytes, 1 write each way.
	if got := billWrite(keys, []gsi{g}, queued, running, true); got.table != 6 || got.index != 2 {
		t.Errorf("moving a 3 KB job in a transaction: %+v; want table 6, index 2", got)
	}
}
