package main

import (
	"math"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// What AWS bills a DynamoDB call, by the rules of its developer guide
// ("Item sizes and formats", "Capacity unit consumption", "Managing
// capacity for transactions", "Provisioned throughput considerations for
// global secondary indexes"). DynamoDB Local reports consumed capacity too,
// but counts transactions and index writes its own way, so the bench
// computes AWS's figure itself from the items before and after each write.

// itemSize is an item's size: each attribute's name and value (UTF-8
// strings, binary bytes, numbers by their significant digits; a list or
// map 3 bytes plus 1 a member, a map's member names counted).
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize is "1 byte per two significant digits, plus 1" (a negative
// number 1 more): leading and trailing zeros are not significant.
func numberSize(s string) int {
	neg := strings.HasPrefix(s, "-")
	mantissa, _, _ := strings.Cut(strings.ToLower(strings.TrimLeft(s, "+-")), "e")
	digits := strings.Trim(strings.ReplaceAll(mantissa, ".", ""), "0")
	if digits == "" {
		return 1 // zero
	}
	n := (len(digits)+1)/2 + 1
	if neg {
		n++
	}
	return n
}

// writeUnits is a standard write of size bytes: 1 WRU a KB, rounded up, at
// least 1.
func writeUnits(size int) float64 {
	return max(1, math.Ceil(float64(size)/1024))
}

// readUnits is a read of size bytes: 1 RRU per 4 KB, rounded up, at least
// 1; half of it when eventually consistent.
func readUnits(size int, consistent bool) float64 {
	u := max(1, math.Ceil(float64(size)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

// transactional is the factor of a write inside TransactWriteItems: AWS
// makes two underlying writes of each item (prepare, commit).
const transactional = 2

// itemWriteUnits is one write of an item (nil when absent): the larger of
// its sizes before and after, so a delete costs the item it removed.
func itemWriteUnits(before, after map[string]types.AttributeValue) float64 {
	return writeUnits(max(itemSize(before), itemSize(after)))
}

// gsi is a global secondary index as the billing sees it.
type gsi struct {
	name, pk, sk string
	projection   types.ProjectionType
	include      []string // INCLUDE's non-key attributes
}

// entry is the index's entry of item: the index's and the table's keys and
// the projected attributes; ok false when the item is not in the index
// (sparse: a key attribute missing).
func (g gsi) entry(item map[string]types.AttributeValue, tableKeys []string) (map[string]types.AttributeValue, bool) {
	if item == nil || item[g.pk] == nil || g.sk != "" && item[g.sk] == nil {
		return nil, false
	}
	if g.projection == types.ProjectionTypeAll {
		return item, true
	}
	e := map[string]types.AttributeValue{}
	keys := append([]string{g.pk, g.sk}, tableKeys...)
	if g.projection == types.ProjectionTypeInclude {
		keys = append(keys, g.include...)
	}
	for _, k := range keys {
		if v, ok := item[k]; ok && k != "" {
			e[k] = v
		}
	}
	return e, true
}

// indexWriteUnits is what a write of an item from before to after costs
// index g: putting an entry in, 1 write of the new entry; taking it out, 1
// of the old; moving it (its key changed), both; changing a projected
// attribute in place, 1 of the larger; nothing when its entry is the same
// or the item is in the index neither before nor after. Index writes are
// standard writes, also inside a transaction.
func indexWriteUnits(g gsi, tableKeys []string, before, after map[string]types.AttributeValue) float64 {
	old, wasIn := g.entry(before, tableKeys)
	cur, isIn := g.entry(after, tableKeys)
	switch {
	case !wasIn && !isIn:
		return 0
	case !wasIn:
		return writeUnits(itemSize(cur))
	case !isIn:
		return writeUnits(itemSize(old))
	case !sameValue(old[g.pk], cur[g.pk]) || !sameValue(old[g.sk], cur[g.sk]):
		return writeUnits(itemSize(old)) + writeUnits(itemSize(cur))
	case sameItem(old, cur):
		return 0
	}
	return writeUnits(max(itemSize(old), itemSize(cur)))
}

func sameItem(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !sameValue(v, b[k]) {
			return false
		}
	}
	return true
}

func sameValue(a, b types.AttributeValue) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberNULL:
		_, ok := b.(*types.AttributeValueMemberNULL)
		return ok
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && string(a.Value) == string(b.Value)
	case *types.AttributeValueMemberL:
		b, ok := b.(*types.AttributeValueMemberL)
		if !ok || len(a.Value) != len(b.Value) {
			return false
		}
		for i := range a.Value {
			if !sameValue(a.Value[i], b.Value[i]) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberM:
		b, ok := b.(*types.AttributeValueMemberM)
		return ok && sameItem(a.Value, b.Value)
	case *types.AttributeValueMemberSS:
		b, ok := b.(*types.AttributeValueMemberSS)
		return ok && strings.Join(a.Value, "\x00") == strings.Join(b.Value, "\x00")
	case *types.AttributeValueMemberNS:
		b, ok := b.(*types.AttributeValueMemberNS)
		return ok && strings.Join(a.Value, "\x00") == strings.Join(b.Value, "\x00")
	}
	return false
}

// billedWrite is what AWS bills one item's write: its table units (doubled
// in a transaction) and its indexes'.
type billedWrite struct {
	table, index float64
}

// billWrite is the write of one item from before to after (either nil),
// inside a transaction or not, on a table with keys tableKeys and indexes
// gsis.
func billWrite(tableKeys []string, gsis []gsi, before, after map[string]types.AttributeValue, inTransaction bool) billedWrite {
	w := billedWrite{table: itemWriteUnits(before, after)}
	if inTransaction {
		w.table *= transactional
	}
	for _, g := range gsis {
		w.index += indexWriteUnits(g, tableKeys, before, after)
	}
	return w
}
