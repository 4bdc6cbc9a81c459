package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/batchd/batchd/config"
	"github.com/batchd/batchd/toolcall"

	"github.com/batchd/batchd/engine"
	"github.com/batchd/batchd/hwprofile"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
	"github.com/batchd/batchd/serve/models"
)

// speculation applies the entry's speculative keys to ec.
func speculation(e config.ModelEntry, ec *LoadSpec) {
	if e.Speculative != "" || e.DraftModel != "" { // the entry's method, not [engine]'s draft model
		ec.Speculative.Method, ec.DraftModel = e.Speculative, e.DraftModel
	}
	if n := max(e.DraftTokens, e.NumSpeculativeTokens); n > 0 {
		ec.Speculative.Tokens = n
	}
}

// In a daemon of several models each one's KV pool defaults to this many
// sequences of its context (at most multiModelKVContext tokens each),
// so that models loaded together share the memory; one model alone
// gets the whole plan.
const (
	multiModelKVSeqs    = 8
	multiModelKVContext = 8192
)

// modelSpecs is every configured model: [model]'s (the default, pinned:
// it stays loaded) and each [models.NAME]; the manager adds models_dir's.
func modelSpecs(c *config.Config) ([]models.Spec, string, error) {
	var specs []models.Spec
	def := c.DefaultModel
	if c.Model.Path != "" && def != "" {
		return nil, "", fmt.Errorf("default_model %q: [model]'s file is the default; set one of them", def)
	}
	if c.Model.Path != "" {
		def = c.DefaultModelName()
		forever := time.Duration(-1)
		var aliases []string
		if file := config.ModelName(c.Model.Path); file != def {
			aliases = []string{file}
		}
		specs = append(specs, models.Spec{Name: def, Aliases: aliases, Path: c.Model.Path, KeepAlive: &forever,
			Options: SpecOf(*c, "")})
	}
	for name, e := range c.Models {
		if name == def {
			return nil, "", fmt.Errorf("models.%s: the name of [model]'s file (%s)", name, c.Model.Path)
		}
		ec := SpecOf(*c, "")
		ec.Model, ec.Tokenizer, ec.Format = e.Path, e.Tokenizer, e.Format
		ec.ChatTemplate, ec.ToolFormat, ec.KVTokens, ec.Context = e.ChatTemplate, e.ToolFormat, e.KVTokens, e.Context
		if e.QuantDot != "" {
			ec.QuantDot = e.QuantDot
		}
		if e.KVCacheType != "" || e.KVCacheTypeK != "" || e.KVCacheTypeV != "" {
			ec.KVCacheType, ec.KVCacheTypeK, ec.KVCacheTypeV = e.KVCacheType, e.KVCacheTypeK, e.KVCacheTypeV
		}
		speculation(e, &ec)
		s := models.Spec{Name: name, Aliases: e.Aliases, Path: e.Path, Preload: e.Preload, Options: ec}
		if e.KeepAlive != nil {
			ka := e.KeepAlive.Duration
			s.KeepAlive = &ka
		}
		specs = append(specs, s)
	}
	return specs, def, nil
}

// preparedModel adapts a prepared engine to the models manager.
type preparedModel struct {
	p   *preparedEngine
	svc *Service
}

func (m preparedModel) Bytes() int64 { return m.p.bytes() }
func (m preparedModel) Abort()       { m.p.abort() }

// Start starts the engine with the live config's scheduler knobs (a
// reload may have changed them since the daemon started).
func (m preparedModel) Start(context.Context) (models.Instance, error) {
	lm, err := m.p.start()
	if err != nil {
		return nil, err
	}
	m.svc.mu.Lock()
	cfg, reloaded := m.svc.cfg, m.svc.reloaded
	m.svc.mu.Unlock()
	if reloaded {
		lm.Engine.SetScheduler(m.svc.liveScheduler(cfg, lm))
		lm.Engine.SetMaxQueue(cfg.Engine.MaxQueue)
	}
	return lm, nil
}

// loadModel is the manager's loader: a spec's engine config (a file in
// models_dir gets the defaults), its KV share, the daemon's ids and gate.
func (svc *Service) loadModel(_ context.Context, ms models.Spec) (models.Pending, error) {
	ec, ok := ms.Options.(LoadSpec)
	if !ok {
		cfg := svc.live()
		ec = SpecOf(cfg, "")
		ec.Model, ec.Tokenizer, ec.Format, ec.ChatTemplate, ec.ToolFormat = ms.Path, "", "", "", ""
	}
	ec.Name, ec.IDs, ec.Gate = ms.Name, &svc.ids, svc.gate
	if svc.opt.Observer != nil {
		ec.Observer = svc.opt.Observer(ms.Name)
	}
	if svc.opt.KVEvents != nil {
		ec.KVEvents = svc.opt.KVEvents(ms.Name, ec.Backend)
	}
	if svc.multi {
		ec.KVShareSeqs = multiModelKVSeqs
	}
	if ec.ProfilesDir == "" {
		ec.ProfilesDir = svc.profilesDir()
	}
	p, err := prepareEngine(ec, svc.log.With("model", ms.Name))
	if err != nil {
		return nil, err
	}
	return preparedModel{p, svc}, nil
}

// acquireModel holds a request's model (loading it if need be) until the
// request ends; the default when name is "".
func (svc *Service) acquireModel(ctx context.Context, name string, keepAlive *time.Duration) (*LoadedModel, *models.Lease, error) {
	lease, err := svc.models.Acquire(ctx, name, keepAlive)
	if err != nil {
		return nil, nil, modelError(err)
	}
	return lease.Instance.(*LoadedModel), lease, nil
}

// modelError maps the manager's errors to wire codes.
func modelError(err error) error {
	switch {
	case errors.Is(err, models.ErrNotFound):
		return wire.Errorf(wire.CodeNotFound, "%v", err)
	case errors.Is(err, models.ErrNoRoom):
		return wire.Errorf(wire.CodeUnavailable, "%v", err)
	case errors.Is(err, models.ErrLoad):
		return wire.Errorf(wire.CodeUnavailable, "%v", err)
	case errors.Is(err, models.ErrClosed):
		return wire.Errorf(wire.CodeUnavailable, "batchd is shutting down")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return wire.Errorf(wire.CodeUnavailable, "gave up waiting for the model: %v", err)
	}
	return wire.Errorf(wire.CodeInternal, "%v", err)
}

// newModels makes the models manager, before the socket serves (lists
// answer while the default model loads); loads wait for MarkReady.
func (svc *Service) newModels(cfg config.Config) error {
	svc.multi = cfg.MultiModel()
	if svc.multi {
		svc.gate = engine.NewTurns()
	}
	specs, def, err := modelSpecs(&cfg)
	if err != nil {
		return err
	}
	if len(specs) > 0 && specs[0].Name == def {
		ec := specs[0].Options.(LoadSpec)
		ec.ProfilesDir = svc.profilesDir()
		specs[0].Options = ec
	}
	maxLoaded := cfg.MaxLoadedModels
	if maxLoaded == 0 {
		maxLoaded = config.DefaultMaxLoaded
	}
	mgr, err := models.New(models.Config{Dir: cfg.ModelsDir, Specs: specs, Default: def, KeepAlive: cfg.KeepAlive.Duration,
		MaxLoaded: maxLoaded, Load: svc.loadModel, Logger: svc.log.With("component", "models")})
	if err != nil {
		return err
	}
	svc.models = mgr
	return nil
}

// Start loads the default model (its failure is the daemon's) and pins
// its prefixes; the memory budget is what the default's plan found on the
// machine, or the machine's without a default model.
func (svc *Service) Start() error {
	lm, err := svc.startModels(svc.live())
	if err != nil {
		return err
	}
	svc.mu.Lock()
	svc.def = lm
	svc.mu.Unlock()
	return nil
}

func (svc *Service) startModels(cfg config.Config) (*LoadedModel, error) {
	mgr := svc.models
	def := ""
	if cfg.Model.Path != "" {
		def = cfg.DefaultModelName()
	}
	if cfg.Model.Path == "" { // no model of its own: the machine's memory, shared
		det := hwprofile.Detect(context.Background(), hwprofile.DefaultGPUProbers(), hwprofile.HostCPU{}, 0)
		profiles := hwprofile.BuiltinProfiles()
		if dir := svc.profilesDir(); dir != "" {
			if p, err := hwprofile.LoadProfiles(dir); err == nil {
				profiles = p
			}
		}
		mgr.SetMemoryBytes(int64(hwprofile.MemoryBudget(det, profiles, "cpu")))
		return nil, nil
	}
	lease, err := mgr.Acquire(context.Background(), def, nil)
	if err != nil {
		_ = mgr.Close()
		if le := (*models.LoadError)(nil); errors.As(err, &le) {
			return nil, le.Err // the load's own error, as before models
		}
		return nil, err
	}
	lease.Release()
	lm := lease.Instance.(*LoadedModel)
	mgr.SetMemoryBytes(int64(lm.Plan.MemoryBytes))
	if err := svc.pinPrefixes(lm, cfg.PrefixCache); err != nil {
		_ = mgr.Close()
		return nil, err
	}
	return lm, nil
}

var _ ipc.ModelLister = (*Service)(nil)

// Models lists every model the daemon knows, loaded or not.
func (svc *Service) Models() []wire.ModelEntry {
	var out []wire.ModelEntry
	for _, i := range svc.models.List() {
		e := wire.ModelEntry{Name: i.Name, Aliases: i.Aliases, Path: i.Path, State: i.State.String(), Default: i.Default,
			Bytes: i.Bytes, Requests: i.Requests, KeepAlive: i.KeepAlive.Seconds(), LoadS: i.LoadTime.Seconds()}
		if i.KeepAlive < 0 {
			e.KeepAlive = -1
		}
		if i.Err != nil {
			e.Error = i.Err.Error()
		}
		if !i.ExpiresAt.IsZero() {
			e.ExpiresAt = i.ExpiresAt.Unix()
		}
		if st, err := os.Stat(i.Path); err == nil {
			e.Size = st.Size()
		}
		if lm, ok := i.Instance.(*LoadedModel); ok {
			e.Info = ModelInfo(lm)
		}
		out = append(out, e)
	}
	return out
}

// LoadModel loads model name (Ollama's generate without a prompt), or
// unloads it; the default model stays. ctx is the caller's: a load whose
// client left stops waiting.
func (svc *Service) LoadModel(ctx context.Context, p ipc.Peer, name, keepAlive string, unload bool) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := svc.waitReady(ctx); err != nil { // loads begin once the daemon is ready
		return err
	}
	if unload {
		if info, err := svc.models.Get(name); err == nil && info.Default {
			return nil // pinned: the daemon's own model stays
		}
		if _, err := svc.models.Unload(name); err != nil {
			return modelError(err)
		}
		return nil
	}
	ka, err := svc.keepAliveFor(p, keepAlive)
	if err != nil {
		return err
	}
	_, lease, err := svc.acquireModel(ctx, name, ka)
	if err != nil {
		return err
	}
	lease.Release()
	return nil
}

// keepAliveFor reads a request's keep_alive ("": the model's default) for
// peer p: an admin's as asked, anyone else's at most server.max_keep_alive
// (forever included), so that no user can hold every model slot; a cut is
// logged.
func (svc *Service) keepAliveFor(p ipc.Peer, asked string) (*time.Duration, error) {
	if asked == "" {
		return nil, nil
	}
	ka, err := config.ParseKeepAlive(asked)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "%v", err)
	}
	limit := svc.live().Server.MaxKeepAlive.Duration
	if limit > 0 && (ka < 0 || ka > limit) && !svc.admin(p) {
		svc.log.Info("keep_alive cut to server.max_keep_alive: only admins may pin a model", "uid", p.UID, "asked", asked, "max", limit)
		ka = limit
	}
	return &ka, nil
}

var _ ipc.ModelAdmin = (*Service)(nil)

// DeleteModel removes a models_dir model's file (an admin's /api/delete):
// the model unloads once idle and leaves the list.
func (svc *Service) DeleteModel(p ipc.Peer, name string) error {
	if err := svc.adminOnly(p, "delete"); err != nil {
		return err
	}
	info, err := svc.models.Get(name)
	if err != nil {
		return modelError(err)
	}
	if !info.FromDir || info.Default {
		return wire.Errorf(wire.CodeInvalidArgument, "%s is configured (batchd.toml), not a file of models_dir: remove it there", info.Name)
	}
	if err := os.Remove(info.Path); err != nil {
		return wire.Errorf(wire.CodeUnavailable, "delete %s: %v", info.Name, err)
	}
	if err := svc.models.Remove(info.Name); err != nil {
		return modelError(err)
	}
	return nil
}

// CopyModel gives a model another name in models_dir (an admin's
// /api/copy): a symbolic link to its file, named dst.gguf.
func (svc *Service) CopyModel(p ipc.Peer, src, dst string) error {
	if err := svc.adminOnly(p, "copy"); err != nil {
		return err
	}
	dir := svc.models.Dir()
	if dir == "" {
		return wire.Errorf(wire.CodeInvalidArgument, "copy: no models_dir to write the new name in")
	}
	info, err := svc.models.Get(src)
	if err != nil {
		return modelError(err)
	}
	dst = strings.TrimSuffix(dst, ":latest")
	if !validModelName(dst) {
		return wire.Errorf(wire.CodeInvalidArgument, "copy: name %q: want letters, digits and . _ - (at most 128)", dst)
	}
	if _, err := svc.models.Get(dst); err == nil {
		return wire.Errorf(wire.CodeInvalidArgument, "copy: a model named %q exists", dst)
	}
	target, err := filepath.Abs(info.Path)
	if err != nil {
		return wire.Errorf(wire.CodeInternal, "copy: %v", err)
	}
	if err := os.Symlink(target, filepath.Join(dir, dst+".gguf")); err != nil {
		return wire.Errorf(wire.CodeUnavailable, "copy %s to %s: %v", info.Name, dst, err)
	}
	return nil
}

// admin says whether p is an admin under the live policy.
func (svc *Service) admin(p ipc.Peer) bool { return svc.access != nil && svc.access.Policy().Admin(p) }

func (svc *Service) adminOnly(p ipc.Peer, what string) error {
	if !svc.admin(p) {
		return wire.Errorf(wire.CodePermissionDenied, "%s: uid %d is not an admin (server.admin_users)", what, p.UID)
	}
	return nil
}

// validModelName is a name a file in models_dir may take.
func validModelName(n string) bool {
	if n == "" || len(n) > 128 || strings.HasPrefix(n, ".") {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r)) {
			return false
		}
	}
	return true
}

// ModelInfo describes a loaded model for health and the models list.
func ModelInfo(lm *LoadedModel) *wire.ModelInfo {
	c := lm.Model.Config
	mi := &wire.ModelInfo{Path: lm.Model.Path, Format: lm.Model.Format, Arch: c.Arch, Dim: c.Dim,
		Layers: c.Layers, Vocab: c.Vocab, Context: c.Context, EmbedOnly: !lm.Model.Generates()}
	if p, err := poolingOf(lm); err == nil && c.Pooling != 0 {
		mi.Pooling = p.String()
	} else if lm.Model.Rank != nil {
		mi.Pooling = engine.PoolRank.String()
	}
	if lm.Chat != nil {
		mi.Chat, mi.ToolFormat, mi.Thinking = lm.Chat.Name(), string(lm.Tools.format), lm.Tools.reasoning != nil || lm.Tools.format == toolcall.Harmony
	} else if lm.ChatErr != nil {
		mi.ChatError = lm.ChatErr.Error()
	}
	return mi
}
