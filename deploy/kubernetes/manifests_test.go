// Package kubernetes holds the manifests of a split run on Kubernetes
// (docs/distributed.md) and the test that checks them: no cluster is at
// hand, so each manifest is decoded strictly into the Kubernetes API's
// own types (an unknown or misspelt field fails), the fields that make a
// split run work are checked, and the segments' arguments are handed to
// this version of v6lab as a dry run. k8s.io/api is imported by this test
// alone, so the binary does not carry it.
package kubernetes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// decodeStrict reads a YAML manifest into v, refusing unknown fields and
// a kind other than want.
func decodeStrict(t *testing.T, name, want string, v any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if doc["kind"] != want {
		t.Fatalf("%s: kind %v, want %s", name, doc["kind"], want)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: not a valid %s: %v", name, want, err)
	}
}

// argAfter is the value following flag in args.
func argAfter(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

func TestTheSplitRunManifests(t *testing.T) {
	var segs, merge batchv1.Job
	var cm corev1.ConfigMap
	var pvc corev1.PersistentVolumeClaim
	decodeStrict(t, "segments.yaml", "Job", &segs)
	decodeStrict(t, "merge.yaml", "Job", &merge)
	decodeStrict(t, "experiment.yaml", "ConfigMap", &cm)
	decodeStrict(t, "results.yaml", "PersistentVolumeClaim", &pvc)

	// An Indexed Job of N pods at once, N the --segment's.
	s := segs.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || s.Parallelism == nil {
		t.Fatalf("segments: completionMode %v completions %v parallelism %v", s.CompletionMode, s.Completions, s.Parallelism)
	}
	n := int(*s.Completions)
	if int(*s.Parallelism) != n {
		t.Errorf("parallelism %d, completions %d: every segment must run at once", *s.Parallelism, n)
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 0 || s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("a failed segment is retried (off its schedule): backoffLimitPerIndex %v, restartPolicy %s", s.BackoffLimitPerIndex, s.Template.Spec.RestartPolicy)
	}
	c := s.Template.Spec.Containers[0]
	if c.Args[0] != "run" || argAfter(c.Args, "--segment") != fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", n) {
		t.Fatalf("segments' args %v: want run … --segment $(JOB_COMPLETION_INDEX)/%d", c.Args, n)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if argAfter(c.Args, "--start-at") != "$(START_AT)" || env["START_AT"].Value == "" {
		t.Errorf("--start-at %q, START_AT %q", argAfter(c.Args, "--start-at"), env["START_AT"].Value)
	}
	if h := env["V6LAB_HOST"].ValueFrom; h == nil || h.FieldRef == nil || h.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("V6LAB_HOST is not the node's name: %+v", env["V6LAB_HOST"])
	}
	// One segment per node.
	aff := s.Template.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
		aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels["batch.kubernetes.io/job-name"] != segs.Name {
		t.Errorf("segments may share a node: %+v", aff)
	}
	// The experiment file comes from the ConfigMap, the results go to
	// the volume the merge reads.
	mounts := func(c corev1.Container, vols []corev1.Volume) map[string]corev1.Volume {
		out := map[string]corev1.Volume{}
		for _, m := range c.VolumeMounts {
			for _, v := range vols {
				if v.Name == m.Name {
					out[m.MountPath] = v
				}
			}
		}
		return out
	}
	sm := mounts(c, s.Template.Spec.Volumes)
	expFile := c.Args[1]
	ev, ok := sm[filepath.Dir(expFile)]
	if !ok || ev.ConfigMap == nil || ev.ConfigMap.Name != cm.Name || cm.Data[filepath.Base(expFile)] == "" {
		t.Fatalf("%s is not the ConfigMap %s's key (mounts %v)", expFile, cm.Name, sm)
	}
	results := argAfter(c.Args, "--results")
	rv, ok := sm["/"+strings.Split(results, "/")[1]]
	if !ok || rv.PersistentVolumeClaim == nil || rv.PersistentVolumeClaim.ClaimName != pvc.Name || !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("results %s are not on the shared claim %s", results, pvc.Name)
	}
	mc := merge.Spec.Template.Spec.Containers[0]
	if mc.Args[0] != "merge" || mc.Args[1] != results {
		t.Errorf("merge args %v: want merge %s", mc.Args, results)
	}
	if mv, ok := mounts(mc, merge.Spec.Template.Spec.Volumes)["/results"]; !ok || mv.PersistentVolumeClaim == nil || mv.PersistentVolumeClaim.ClaimName != pvc.Name {
		t.Errorf("the merge does not mount %s", pvc.Name)
	}
	for _, j := range []*batchv1.Job{&segs, &merge} {
		sc := j.Spec.Template.Spec.Containers[0].SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s runs as root or with a writable root file system", j.Name)
		}
	}

	// This version of v6lab accepts the segments' arguments as they
	// reach pod 1, against the ConfigMap's experiment, in a dry run.
	dir := t.TempDir()
	bin := filepath.Join(dir, "v6lab")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/v6lab").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	file := filepath.Join(dir, filepath.Base(expFile))
	os.WriteFile(file, []byte(cm.Data[filepath.Base(expFile)]), 0o644)
	args := slices.Clone(c.Args)
	for i, a := range args {
		a = strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", "1")
		a = strings.ReplaceAll(a, "$(START_AT)", env["START_AT"].Value)
		a = strings.Replace(a, "/results/", dir+"/", 1) // the pod's volume (--results makes only its last directory)
		args[i] = strings.Replace(a, expFile, file, 1)
	}
	args = append(slices.DeleteFunc(args, func(a string) bool { return a == "--quiet" }), "--dry-run")
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("v6lab %v: %v\n%s", args, err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("segment 1/%d of every run: ", n)) || !strings.Contains(string(out), "on hosts") {
		t.Errorf("dry run:\n%s", out)
	}
}

// TestTheSurveyManifest: the survey's ConfigMap and Indexed Job decode
// strictly, the Job's N is --segment's, the list and exclusion list come
// from the ConfigMap, and this version of v6lab accepts pod 1's arguments
// in a dry run.
func TestTheSurveyManifest(t *testing.T) {
	b, err := os.ReadFile("survey.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("survey.yaml has %d documents, want the ConfigMap and the Job", len(docs))
	}
	dir := t.TempDir()
	for i, d := range docs {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("doc%d.yaml", i)), []byte(d), 0o644)
	}
	var cm corev1.ConfigMap
	var job batchv1.Job
	decodeStrict(t, filepath.Join(dir, "doc0.yaml"), "ConfigMap", &cm)
	decodeStrict(t, filepath.Join(dir, "doc1.yaml"), "Job", &job)
	n := int(*job.Spec.Completions)
	c := job.Spec.Template.Spec.Containers[0]
	if c.Args[0] != "survey" || argAfter(c.Args, "--segment") != fmt.Sprintf("$(JOB_COMPLETION_INDEX)/%d", n) || argAfter(c.Args, "--contact") == "" {
		t.Fatalf("survey args %v: want survey LIST --segment $(JOB_COMPLETION_INDEX)/%d --contact …", c.Args, n)
	}
	bin := filepath.Join(dir, "v6lab")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/v6lab").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var args []string
	for _, a := range c.Args {
		a = strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", "1")
		a = strings.Replace(a, "/results/", dir+"/", 1) // the pod's volume (--results makes only its last directory)
		if rest, ok := strings.CutPrefix(a, "/sites/"); ok {
			if cm.Data[rest] == "" {
				t.Fatalf("%s is not a key of the ConfigMap", a)
			}
			a = filepath.Join(dir, rest)
			os.WriteFile(a, []byte(cm.Data[rest]), 0o644)
		}
		if a != "--quiet" {
			args = append(args, a)
		}
	}
	// The pod's resolver is the cluster's; here one is named.
	args = append(args, "--dry-run", "--dns-server", "192.0.2.53", "--dns-server", "2001:db8::53")
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("1 of the 4 sites of %s (segment 1/%d", filepath.Join(dir, "sites.txt"), n)) ||
		!strings.Contains(string(out), "1 name excluded") {
		t.Errorf("v6lab %v: %v\n%s", args, err, out)
	}
}
