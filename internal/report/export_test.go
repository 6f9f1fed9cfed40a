package report

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"v6lab/internal/result"
)

// pyReader is a Python with DuckDB and pyarrow (scripts/install-deps
// --data), or "" with why not.
func pyReader(t *testing.T) string {
	dir := os.Getenv("V6LAB_PYENV")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "v6lab", "pyenv")
		if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
			dir = filepath.Join(x, "v6lab", "pyenv")
		}
	}
	py := filepath.Join(dir, "bin", "python")
	if err := exec.Command(py, "-c", "import duckdb, pyarrow").Run(); err != nil {
		t.Skipf("no Python with duckdb and pyarrow at %s (scripts/install-deps --data makes it): %v", py, err)
	}
	return py
}

// readParquet is what DuckDB and pyarrow, not v6lab, read in the export:
// the columns' types, the row count, and per cell the mean of its run
// means over counted, completed samples (docs/formats.md's query).
const readParquet = `
import duckdb, json, pyarrow.parquet as pq, sys
name = sys.argv[1]
schema = {f.name: str(f.type) for f in pq.read_schema(name)}
means = duckdb.sql("""
  SELECT cell, avg(run_mean) AS mean_ms FROM (
    SELECT cell, run, avg(total_ns) / 1e6 AS run_mean
    FROM read_parquet(?) WHERE counted AND err = '' GROUP BY cell, run)
  GROUP BY cell ORDER BY cell""", params=[name]).fetchall()
rows = duckdb.sql("SELECT count(*), sum(len(intervals)), count(metrics['ipv6_won']) FROM read_parquet(?)", params=[name]).fetchall()[0]
print(json.dumps({"schema": schema, "means": dict(means), "rows": rows}))
`

// TestParquetReadsInDuckDB: v6lab export's Parquet is read by DuckDB and
// pyarrow: one typed column per sample field, every row, and the query
// docs/formats.md gives recomputes each cell's mean as summary.json has
// it (a run left out by its record is not counted; warm-ups are not).
func TestParquetReadsInDuckDB(t *testing.T) {
	py := pyReader(t)
	f := manySamples(5)
	f.Runs[7].Err = "wire: 2 packets over ipv4"
	f.Samples[0].Intervals = []result.Interval{{StartNS: 0, EndNS: 1e9, Bytes: 100}, {StartNS: 1e9, EndNS: 2e9, Bytes: 200, Retrans: 1}}
	dir := t.TempDir()
	writeInOrder(t, dir, f, true)
	out := filepath.Join(dir, result.ParquetName)
	fh, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := result.ExportParquet(filepath.Join(dir, result.SamplesName), fh, CheckSample)
	fh.Close()
	if err != nil || rows != int64(len(f.Samples)) {
		t.Fatalf("exported %d of %d samples: %v", rows, len(f.Samples), err)
	}
	b, err := exec.Command(py, "-c", readParquet, out).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	var got struct {
		Schema map[string]string
		Means  map[string]float64
		Rows   []int64
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	for col, typ := range map[string]string{"cell": "string", "conns": "int64", "warmup": "bool", "counted": "bool",
		"start": "timestamp[ns, tz=UTC]", "total_ns": "int64", "negotiated": "string", "zero_rtt": "bool", "again": "int64", "wire_ns": "int64", "err_kind": "string",
		"metrics": "map<string, double ('metrics')>", "intervals": "list<element: struct<start_ns: int64 not null, end_ns: int64 not null, bytes: int64 not null, retrans: int64 not null, rtt_us: int64 not null, cwnd: int64 not null, omitted: bool not null> not null>"} {
		if got.Schema[col] != typ {
			t.Errorf("column %s: %q, want %q", col, got.Schema[col], typ)
		}
	}
	if len(got.Schema) != 34 {
		t.Errorf("%d columns: %v", len(got.Schema), got.Schema)
	}
	if got.Rows[0] != int64(len(f.Samples)) || got.Rows[1] != 2 || got.Rows[2] == 0 {
		t.Errorf("rows, intervals, ipv6_won metrics: %v", got.Rows)
	}
	s := Summarize(f)
	for _, c := range s.Cells {
		key := result.CellKey(c.Protocol, c.Path, c.Conns)
		if m := got.Means[key]; c.MeanMS == nil || !near(m, *c.MeanMS) {
			t.Errorf("%s: DuckDB's mean %v, summary.json's %v", key, m, c.MeanMS)
		}
	}
}
