package inlab

import (
	"encoding/json"
	"testing"
)

// TestResumeOfNoFinishedRun (trial10b N2): a lab run killed in its first
// run has no run done; resuming it sends the child a job whose Done is
// empty, which job.json drops. The child must still resume (append to the
// samples file), not start anew (create it: "file exists").
func TestResumeOfNoFinishedRun(t *testing.T) {
	b, err := json.Marshal(&Job{Dir: "/results/x", Done: map[int]bool{}})
	if err != nil {
		t.Fatal(err)
	}
	var j Job
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if r := j.resume(); r == nil || r.Done == nil || len(r.Done) != 0 {
		t.Fatalf("the job read back resumes %+v, want a resume with no run done", r)
	}
	if (&Job{}).resume() != nil {
		t.Error("a job with no directory to resume resumes")
	}
}
