package lifecycle

import (
	"encoding/json"

	"genjobs/internal/job"
)

// Lanes: the jobs queues, each read by a worker sized for its jobs.
const (
	// LaneHeavy is the large worker's queue (WorkerMemorySize, 10 GB by
	// default): it runs any job, and every job whose lane is not known.
	LaneHeavy = "heavy"
	// LaneLight is the small worker's queue (LightWorkerMemorySize): jobs
	// whose output is at most LightMaxOutputPixels.
	LaneLight = "light"
)

// LightMaxOutputPixels is the largest output (or video frame) a light
// job makes: 2048 x 2048. Its decoded form and an encoder's buffers fit in
// the light worker's memory with room for a source of up to
// LightMaxSourcePixels.
const LightMaxOutputPixels = 2048 * 2048

// LightMaxSourcePixels is the largest source image the light worker
// decodes: sources are not known at creation (a URL is fetched by the
// worker), so the light worker hands a job with a larger one to the heavy
// lane (worker.Worker.MaxSourcePixels).
const LightMaxSourcePixels = 24_000_000

// QueueFor decides which jobs queue runs j: the one place that routes jobs.
// It is called once, at creation, and its answer is stored as j.Lane; only
// a light worker's hand-over changes it afterwards (to LaneHeavy, recorded
// with job.Change.Lane). The promotions and the sweeper's re-sends send
// the job where j.Lane says. It reads the validated request: a job whose
// output (width x height, a video's frame) is at most LightMaxOutputPixels,
// or that has no size, is light; the rest are heavy.
func QueueFor(j *job.Job) string {
	var size struct {
		Width  int64 `json:"width"`
		Height int64 `json:"height"`
	}
	if err := json.Unmarshal(j.Request, &size); err != nil {
		return LaneHeavy
	}
	if size.Width*size.Height > LightMaxOutputPixels {
		return LaneHeavy
	}
	return LaneLight
}
