package store

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"genjobs/internal/job"
)

// The console's job list reads at most two calls a page (docs/console.md,
// "Jobs"): one Query of the index that holds exactly the jobs of its
// filter, newest first, and one BatchGetItem of those jobs whole. The
// jobs-by-filter index (GSI5PK / GSI5SK, keys only) gives each filter a
// partition of the workspace's jobs of one value, written on items every
// creation already writes or one beside them, in the creation's
// transaction:
//
//	WSJOBS#<ws>#endpoint#<path>   the job's item (JOB#<id> / JOB)
//	WSJOBS#<ws>#source#<source>   the job's request (JOB#<id> / REQUEST)
//	WSJOBS#<ws>#person#<user id>  JOB#<id> / PERSON, only for a job a
//	                              signed-in person made
//
// the sort key <created>#<id> as jobs-by-workspace's. None of them
// changes after the creation, and a keys-only index takes no write when
// a job's status or progress changes. A status alone is served by
// jobs-by-status (its sparse partitions hold the jobs that have not
// ended) or, for an ended status, by jobs-by-workspace under a bounded
// filter (MaxPageScan index entries a page); two filters or more are
// served by the index of one (person, else endpoint, else source) and the
// rest checked on the jobs read whole, so a page may come back short, with
// a cursor to go on.

// filterSK is the item whose jobs-by-filter key names the job's person.
const filterSK = "PERSON"

func filterPK(ws, field, value string) string { return "WSJOBS#" + ws + "#" + field + "#" + value }

// personItem puts a job in its person's partition of jobs-by-filter.
type personItem struct {
	PK, SK         string
	GSI5PK, GSI5SK string
}

// MaxPageScan bounds the index entries one page of an ended status reads
// (a Query with a filter on jobs-by-workspace): one call, however rare the
// status. A page that reaches it comes back short with a cursor.
const MaxPageScan = 500

func (s *Store) maxPageScan() int {
	if s.listScan > 0 {
		return s.listScan
	}
	return MaxPageScan
}

// JobsPage reads a page of up to limit of workspace ws's jobs that pass
// f, newest first, whole (as Job reads them, without their requests),
// after cursor (a previous page's NextCursor, for the same ws and f): one
// Query and one BatchGetItem. A cursor of another workspace or filter, or
// that does not parse, is job.ErrBadCursor.
func (s *Store) JobsPage(ctx context.Context, ws string, f job.Filter, cursor string, limit int) (job.Page, error) {
	if limit < 1 || limit > maxBatchGet {
		return job.Page{}, fmt.Errorf("jobs page: limit %d is outside 1..%d", limit, maxBatchGet)
	}
	binding := filterBinding(ws, f)
	var after string
	if cursor != "" {
		var err error
		if after, err = decodePageCursor(cursor, binding); err != nil {
			return job.Page{}, err
		}
	}
	in, sortKey, rest := s.pageQuery(ws, f, after, limit)
	out, err := s.db.Query(ctx, in)
	if err != nil {
		return job.Page{}, fmt.Errorf("list jobs of %s: %w", ws, err)
	}
	var ids, positions []string
	for _, item := range out.Items {
		pos := attrString(item[sortKey])
		if sortKey == "GSI2SK" {
			pos = strings.TrimPrefix(pos, ws+"#")
		}
		_, id, ok := strings.Cut(pos, "#")
		if !ok || !job.ValidID(id) {
			return job.Page{}, fmt.Errorf("list jobs of %s: an index entry at %q names no job", ws, pos)
		}
		ids, positions = append(ids, id), append(positions, pos)
		if len(ids) == limit {
			break
		}
	}
	var page job.Page
	switch {
	case len(ids) == limit && (len(ids) < len(out.Items) || out.LastEvaluatedKey != nil):
		page.NextCursor = encodePageCursor(positions[len(positions)-1], binding)
	case len(ids) < limit && out.LastEvaluatedKey != nil: // the scan's bound
		page.NextCursor = encodePageCursor(lastPosition(out.LastEvaluatedKey, sortKey, ws), binding)
	}
	if len(ids) == 0 {
		return page, nil
	}
	jobs, err := s.JobsByID(ctx, ids)
	if err != nil {
		return job.Page{}, err
	}
	for _, j := range jobs {
		// The items have the last word: an index is eventually consistent.
		if j.WorkspaceID == ws && rest.Matches(j) {
			page.Jobs = append(page.Jobs, j)
		}
	}
	return page, nil
}

// pageQuery is the one Query of a page: the index and partition that
// serve f, the sort key its positions are read from, and the part of f
// the jobs read whole are checked on besides.
func (s *Store) pageQuery(ws string, f job.Filter, after string, limit int) (*dynamodb.QueryInput, string, job.Filter) {
	rest := f
	index, pk, sk, partition := IndexJobsByWorkspace, "GSI1PK", "GSI1SK", workspaceJobsPK(ws)
	switch {
	case f.Person != "":
		index, pk, sk, partition = IndexJobsByFilter, "GSI5PK", "GSI5SK", filterPK(ws, "person", f.Person)
		rest.Person = ""
	case f.Endpoint != "":
		index, pk, sk, partition = IndexJobsByFilter, "GSI5PK", "GSI5SK", filterPK(ws, "endpoint", f.Endpoint)
		rest.Endpoint = ""
	case f.Source != "":
		index, pk, sk, partition = IndexJobsByFilter, "GSI5PK", "GSI5SK", filterPK(ws, "source", f.Source)
		rest.Source = ""
	case f.Status != "" && !f.Status.Terminal():
		// The workspace's jobs of a status that has not ended: one shard
		// of jobs-by-status, its sort key <ws>#<created>#<id>.
		index, pk, sk, partition = IndexJobsByStatus, "GSI2PK", "GSI2SK", statusPK(f.Status, Shard(ws))
		rest.Status = ""
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(index),
		KeyConditionExpression:    aws.String(pk + " = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": String(partition)},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit)),
	}
	switch {
	case index == IndexJobsByStatus:
		in.KeyConditionExpression = aws.String("GSI2PK = :pk AND begins_with(GSI2SK, :ws)")
		in.ExpressionAttributeValues[":ws"] = String(ws + "#")
		if after != "" { // the entry the last page ended with, exclusive
			_, id, _ := strings.Cut(after, "#")
			in.ExclusiveStartKey = map[string]types.AttributeValue{
				"GSI2PK": String(partition), "GSI2SK": String(ws + "#" + after),
				"PK": String(JobPK(id)), "SK": String("JOB"),
			}
		}
	case after != "":
		in.KeyConditionExpression = aws.String(pk + " = :pk AND " + sk + " < :after")
		in.ExpressionAttributeValues[":after"] = String(after)
	}
	if index == IndexJobsByWorkspace && rest.Status != "" { // an ended status: a bounded filter
		in.FilterExpression = aws.String("#status = :status")
		in.ExpressionAttributeNames = map[string]string{"#status": "status"}
		in.ExpressionAttributeValues[":status"] = String(string(rest.Status))
		in.Limit = aws.Int32(int32(s.maxPageScan()))
		rest.Status = ""
	}
	return in, sk, rest
}

func attrString(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// lastPosition is the position a bounded page stopped at.
func lastPosition(key map[string]types.AttributeValue, sortKey, ws string) string {
	return strings.TrimPrefix(attrString(key[sortKey]), ws+"#")
}

// filterBinding ties a cursor to its workspace and filter.
func filterBinding(ws string, f job.Filter) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{"page", ws, string(f.Status), f.Endpoint, f.Source, f.Person}, "\x00")))
	return hex.EncodeToString(sum[:8])
}

func decodePageCursor(text, binding string) (string, error) {
	if len(text) > 512 {
		return "", job.ErrBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return "", job.ErrBadCursor
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.Query != binding {
		return "", job.ErrBadCursor
	}
	created, id, ok := strings.Cut(c.After, "#")
	if _, err := job.ParseTime(created); !ok || err != nil || !job.ValidID(id) {
		return "", job.ErrBadCursor
	}
	return c.After, nil
}

func encodePageCursor(after, binding string) string {
	b, _ := json.Marshal(cursor{After: after, Query: binding})
	return base64.RawURLEncoding.EncodeToString(b)
}
