package snapstore

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/snapstore/snapstore/adapters/source"
)

// pointVersion is the mode of a point of a snapstore connection: one
// version of one source dataset, whose tables a run of several tables
// copies. A version of a dataset is already one consistent moment of
// every table it holds (one commit covers them all), so the point holds
// nothing open on the source: it pins the version number.
const pointVersion source.PointMode = "dataset_version"

// snapPoint is a point of a snapstore connection (source.PointOpener):
// the version of the source dataset current when its first table is
// opened, which every later table of the point reads (GET ...?version=N).
// The tables of one point come from one dataset: tables of two datasets
// were committed by separate runs, at no common moment. The readers share
// the connection's HTTP client; slots bound them to the point's
// connections, as a database's point is bound.
type snapPoint struct {
	src   *snapSource
	slots *source.PointConns[int]
	n     int

	mu  sync.Mutex // guards pin
	pin target     // the dataset and, in at, the version number; zero until the first table
}

// OpenPoint implements source.PointOpener. Nothing is asked of the server
// until the first OpenTable, which names the dataset.
func (s *snapSource) OpenPoint(_ context.Context, req source.PointRequest) (source.Point, error) {
	if req.Mode != "" && req.Mode != pointVersion {
		return nil, fmt.Errorf("%w: %s (a snapstore connection reads a point as one version of a dataset)", source.ErrPointMode, req.Mode)
	}
	n := source.PointConnections(req)
	slots := make([]int, n)
	for i := range slots {
		slots[i] = i
	}
	return &snapPoint{src: s, n: n, slots: source.NewPointConns(slots, func(int) error { return nil })}, nil
}

// CheckPoint implements source.PointChecker: the tables selected must be
// of one source dataset (a table of a dataset of several tables lists
// the dataset as its schema; a dataset of one table is its own), and that
// dataset must not be req.Dataset itself, created at req.DatasetCreated
// (GET /v1/datasets/{dataset}), as OpenTable refuses one table of it.
func (s *snapSource) CheckPoint(ctx context.Context, req source.PointCheck) error {
	var datasets []string
	for _, r := range req.Tables {
		d := r.Schema
		if d == "" {
			d = r.Name
		}
		if !slices.Contains(datasets, d) {
			datasets = append(datasets, d)
		}
	}
	if len(datasets) > 1 {
		slices.Sort(datasets)
		return &source.OptionError{Key: "resources", Msg: fmt.Sprintf(
			"the tables selected are of the datasets %s: the tables of one run come from one version of one source dataset; give each source dataset an adapter of its own",
			quotedList(datasets))}
	}
	if len(datasets) == 0 || datasets[0] != req.Dataset || req.DatasetCreated.IsZero() {
		return nil
	}
	var ans datasetAnswer
	if _, err := s.getJSON(ctx, "/v1/datasets/"+url.PathEscape(datasets[0]), nil, &ans); err != nil {
		return s.versionErr(err, datasets[0], 0)
	}
	if ans.CreatedAt.Equal(req.DatasetCreated) {
		return s.ownDataset("resources", datasets[0])
	}
	return nil
}

// quotedList is names quoted and joined with ", ".
func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// Info implements source.Point. Position names the version once the
// first table pinned it.
func (p *snapPoint) Info() source.PointInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	info := source.PointInfo{Mode: pointVersion, Connections: p.n,
		Reason: "snapstore: one version of the source dataset holds every table at one moment"}
	if p.pin.dataset != "" {
		info.Position = p.pin.dataset + "@" + p.pin.at
	}
	return info
}

// OpenTable implements source.Point: the table at the point's version of
// its dataset; the first table opened pins the version current then. A
// table of another dataset, or a tag naming another version, is an
// *OptionError; a table the pinned version does not hold is
// source.ErrResourceNotFound naming it.
func (p *snapPoint) OpenTable(ctx context.Context, req source.TableRequest) (source.TableReader, error) {
	if err := source.NoSharedSnapshot(req); err != nil {
		return nil, err
	}
	slot, err := p.slots.Take(ctx)
	if err != nil {
		return nil, err
	}
	t, err := p.open(ctx, req)
	if err != nil {
		p.slots.Put(slot, nil)
		return nil, err
	}
	t.release = func() { p.slots.Put(slot, t) }
	p.slots.Opened(t)
	return t, nil
}

// open resolves req's resource at the pinned version, pinning it first
// when no table did yet.
func (p *snapPoint) open(ctx context.Context, req source.TableRequest) (*table, error) {
	p.mu.Lock()
	pin := p.pin
	if pin.dataset != "" {
		p.mu.Unlock()
	} else {
		// The first table: the pin is taken under the lock, so that
		// tables opened at once agree on it.
		defer p.mu.Unlock()
	}
	r, err := p.src.resolve(ctx, req.Resource, pin)
	if err != nil {
		return nil, err
	}
	v := strconv.FormatInt(r.vi.Version, 10)
	switch {
	case pin.dataset == "":
		p.pin = target{dataset: r.dataset, at: v}
	case r.dataset != pin.dataset:
		return nil, &source.OptionError{Key: "resources", Msg: fmt.Sprintf(
			"%s is not of dataset %q: the tables of one run come from one version of one source dataset", r.what(), pin.dataset)}
	case v != pin.at:
		return nil, &source.OptionError{Key: "resources", Msg: fmt.Sprintf(
			"%s is read at version %s, not at the run's version %s of the dataset", r.what(), v, pin.at)}
	}
	return p.src.openResolved(req, r)
}

// Close implements source.Point: the readers still open are closed.
func (p *snapPoint) Close() error { return p.slots.Close() }
