package lifecycle_test

import (
	"testing"

	"genjobs/internal/job"
	"genjobs/internal/lifecycle"
)

func TestQueueForSendsSmallOutputsToTheLightWorker(t *testing.T) {
	for _, c := range []struct {
		request string
		want    string
	}{
		{`{"width":2048,"height":2048,"image_url":"x","model":"Standard V2"}`, lifecycle.LaneLight},
		{`{"width":512,"height":512}`, lifecycle.LaneLight},
		{`{"width":2049,"height":2048}`, lifecycle.LaneHeavy},
		{`{"width":16000,"height":16000}`, lifecycle.LaneHeavy},
		{`{"prompt":"a cube","mode":"text"}`, lifecycle.LaneLight}, // no size: a mesh, a fixed-size video
		{`{"duration":10,"aspect_ratio":"16:9","width":1280,"height":720}`, lifecycle.LaneLight},
		{`not json`, lifecycle.LaneHeavy},
	} {
		if got := lifecycle.QueueFor(&job.Job{Request: []byte(c.request)}); got != c.want {
			t.Errorf("%s: %s; want %s", c.request, got, c.want)
		}
	}
}
