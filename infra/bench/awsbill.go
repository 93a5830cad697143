package main

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// awsUnits is what AWS would bill DynamoDB calls (dynamorules.go): write
// units of the tables' items, standard and transactional (counted
// doubled), of their indexes, and read units.
type awsUnits struct {
	tableWRU, txWRU, indexWRU, rru float64
	// refused counts conditional writes refused and transactions cancelled:
	// billed for the item they found (a transaction's prepare, once).
	refused int
}

func (a awsUnits) wru() float64 { return a.tableWRU + a.txWRU + a.indexWRU }

func (a awsUnits) minus(o awsUnits) awsUnits {
	return awsUnits{a.tableWRU - o.tableWRU, a.txWRU - o.txWRU, a.indexWRU - o.indexWRU, a.rru - o.rru, a.refused - o.refused}
}

// awsBill counts what AWS would bill the calls of a DynamoDB client it is a
// middleware of: it reads each item a write names before and after the
// write with raw, a client of its own (which nothing meters), and sizes
// reads on the whole items read (a projection does not make a read cheaper).
type awsBill struct {
	raw *dynamodb.Client
	// on: its reads around each write slow the writes down, so it counts
	// only the phases that measure cost, not those that measure latency.
	on atomic.Bool

	mu     sync.Mutex
	tables map[string]tableShape
	units  awsUnits
}

type tableShape struct {
	keys []string
	gsis []gsi
}

func (b *awsBill) snapshot() awsUnits {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.units
}

func (b *awsBill) shape(ctx context.Context, table string) (tableShape, error) {
	b.mu.Lock()
	s, ok := b.tables[table]
	b.mu.Unlock()
	if ok {
		return s, nil
	}
	out, err := b.raw.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return s, err
	}
	for _, k := range out.Table.KeySchema {
		s.keys = append(s.keys, aws.ToString(k.AttributeName))
	}
	for _, ix := range out.Table.GlobalSecondaryIndexes {
		g := gsi{name: aws.ToString(ix.IndexName), projection: ix.Projection.ProjectionType, include: ix.Projection.NonKeyAttributes}
		for _, k := range ix.KeySchema {
			if k.KeyType == types.KeyTypeHash {
				g.pk = aws.ToString(k.AttributeName)
			} else {
				g.sk = aws.ToString(k.AttributeName)
			}
		}
		s.gsis = append(s.gsis, g)
	}
	b.mu.Lock()
	if b.tables == nil {
		b.tables = map[string]tableShape{}
	}
	b.tables[table] = s
	b.mu.Unlock()
	return s, nil
}

// get reads an item whole, strongly consistent; nil when there is none.
func (b *awsBill) get(ctx context.Context, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	out, err := b.raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil
	}
	return out.Item
}

// write is one item a call writes.
type write struct {
	table  string
	key    map[string]types.AttributeValue
	before map[string]types.AttributeValue
	check  bool // a transaction's ConditionCheck: read, not changed
}

func keyOf(item map[string]types.AttributeValue, keys []string) map[string]types.AttributeValue {
	k := map[string]types.AttributeValue{}
	for _, name := range keys {
		k[name] = item[name]
	}
	return k
}

// writes lists the items a write call names; nil for a read.
func (b *awsBill) writes(ctx context.Context, in any) ([]write, bool, error) {
	var ws []write
	add := func(table *string, key, item map[string]types.AttributeValue, check bool) error {
		s, err := b.shape(ctx, aws.ToString(table))
		if err != nil {
			return err
		}
		if key == nil {
			key = keyOf(item, s.keys)
		}
		ws = append(ws, write{table: aws.ToString(table), key: key, check: check})
		return nil
	}
	var err error
	tx := false
	switch p := in.(type) {
	case *dynamodb.PutItemInput:
		err = add(p.TableName, nil, p.Item, false)
	case *dynamodb.UpdateItemInput:
		err = add(p.TableName, p.Key, nil, false)
	case *dynamodb.DeleteItemInput:
		err = add(p.TableName, p.Key, nil, false)
	case *dynamodb.TransactWriteItemsInput:
		tx = true
		for _, it := range p.TransactItems {
			switch {
			case it.Put != nil:
				err = errors.Join(err, add(it.Put.TableName, nil, it.Put.Item, false))
			case it.Update != nil:
				err = errors.Join(err, add(it.Update.TableName, it.Update.Key, nil, false))
			case it.Delete != nil:
				err = errors.Join(err, add(it.Delete.TableName, it.Delete.Key, nil, false))
			case it.ConditionCheck != nil:
				err = errors.Join(err, add(it.ConditionCheck.TableName, it.ConditionCheck.Key, nil, true))
			}
		}
	}
	return ws, tx, err
}

// middleware is the awsBill of a client's calls.
func (b *awsBill) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("BenchAWSBill",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if !b.on.Load() || unmetered(ctx) {
				return next.HandleInitialize(ctx, in)
			}
			ws, tx, err := b.writes(ctx, in.Parameters)
			if err != nil {
				return next.HandleInitialize(ctx, in)
			}
			for i := range ws {
				ws[i].before = b.get(ctx, ws[i].table, ws[i].key)
			}
			out, md, callErr := next.HandleInitialize(ctx, in)
			var units awsUnits
			if len(ws) > 0 {
				units = b.billWrites(ctx, ws, tx, callErr)
			} else if callErr == nil {
				units.rru = b.billRead(ctx, in.Parameters, out.Result)
			}
			b.mu.Lock()
			b.units.tableWRU += units.tableWRU
			b.units.txWRU += units.txWRU
			b.units.indexWRU += units.indexWRU
			b.units.rru += units.rru
			b.units.refused += units.refused
			b.mu.Unlock()
			return out, md, callErr
		}), middleware.After)
}

func (b *awsBill) billWrites(ctx context.Context, ws []write, tx bool, callErr error) awsUnits {
	var u awsUnits
	var refused *types.ConditionalCheckFailedException
	var cancelled *types.TransactionCanceledException
	switch {
	case errors.As(callErr, &refused) || errors.As(callErr, &cancelled):
		// Billed for the item the condition was checked on, as a standard
		// write (a transaction: its prepare, once).
		u.refused = 1
		for _, w := range ws {
			u.tableWRU += itemWriteUnits(w.before, nil)
		}
		return u
	case callErr != nil:
		return u // not applied: an outage or a bad request
	}
	for _, w := range ws {
		s, _ := b.shape(ctx, w.table)
		after := w.before
		if !w.check {
			after = b.get(ctx, w.table, w.key)
		}
		bw := billWrite(s.keys, s.gsis, w.before, after, tx)
		if tx {
			u.txWRU += bw.table
		} else {
			u.tableWRU += bw.table
		}
		u.indexWRU += bw.index
	}
	return u
}

// itemsSize is the size of items together.
func itemsSize(items []map[string]types.AttributeValue) int {
	n := 0
	for _, it := range items {
		n += itemSize(it)
	}
	return n
}

// billRead is the read units of a read call: items sized whole.
func (b *awsBill) billRead(ctx context.Context, in, out any) float64 {
	consistent := func(c *bool) bool { return aws.ToBool(c) }
	// whole is the size of the item read: read again whole when a
	// projection left some of it out (by key, else by the keys it kept).
	whole := func(table string, key, item map[string]types.AttributeValue, projected bool) int {
		if !projected || item == nil {
			return itemSize(item)
		}
		if key == nil {
			s, err := b.shape(ctx, table)
			if err != nil {
				return itemSize(item)
			}
			if key = keyOf(item, s.keys); slices.Contains(slices.Collect(maps.Values(key)), nil) {
				return itemSize(item) // the projection dropped a key: no better
			}
		}
		return itemSize(b.get(ctx, table, key))
	}
	switch p := in.(type) {
	case *dynamodb.GetItemInput:
		o, _ := out.(*dynamodb.GetItemOutput)
		if o == nil {
			return 0
		}
		return readUnits(whole(aws.ToString(p.TableName), p.Key, o.Item, p.ProjectionExpression != nil), consistent(p.ConsistentRead))
	case *dynamodb.BatchGetItemInput:
		o, _ := out.(*dynamodb.BatchGetItemOutput)
		if o == nil {
			return 0
		}
		var u float64
		for table, items := range o.Responses {
			ka := p.RequestItems[table]
			for _, it := range items {
				u += readUnits(whole(table, nil, it, ka.ProjectionExpression != nil), consistent(ka.ConsistentRead))
			}
		}
		return u
	case *dynamodb.QueryInput:
		// A Query is billed on the sum of the items (index entries) it
		// read, rounded once: here the items it returned.
		if o, _ := out.(*dynamodb.QueryOutput); o != nil {
			return readUnits(itemsSize(o.Items), consistent(p.ConsistentRead))
		}
	case *dynamodb.ScanInput:
		if o, _ := out.(*dynamodb.ScanOutput); o != nil {
			return readUnits(itemsSize(o.Items), consistent(p.ConsistentRead))
		}
	}
	return 0
}
