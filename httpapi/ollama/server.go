// Package ollama serves Ollama's REST API (/api/chat, /api/generate,
// /api/tags, /api/ps, /api/show, /api/version) on batchd's HTTP listeners,
// for the applications that speak only it (Home Assistant, n8n, Continue,
// Open WebUI's Ollama connection). Requests map to wire.Submit exactly as
// the OpenAI API's do; what batchd cannot honour is a 400 naming it.
package ollama

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/batchd/batchd/httpapi"
	"github.com/batchd/batchd/ipc"
	"github.com/batchd/batchd/ipc/wire"
)

// Version is the Ollama API level served: clients check it for features.
const Version = "0.12.6"

// maxBody bounds a request body, as the OpenAI API's.
const maxBody = 8 << 20

// Backend is what the API needs of the daemon: requests, the models list,
// loading and unloading (a generate with no prompt).
type Backend interface {
	ipc.Backend
	ipc.ModelLister
	ipc.ModelLoader
	ipc.ModelAdmin
	ipc.Embedder
}

// API is the Ollama API over a backend.
type API struct {
	b     Backend
	users httpapi.Users
}

// Register adds the routes to srv.
func Register(srv *httpapi.Server, b Backend) {
	a := &API{b: b, users: srv.Users()}
	srv.Route("GET /{$}", a.root, nil) // GET and HEAD: "Ollama is running"
	for pattern, h := range map[string]httpapi.PeerHandler{
		"GET /api/version":     a.version,
		"GET /api/tags":        a.tags,
		"GET /api/ps":          a.ps,
		"POST /api/show":       a.show,
		"POST /api/chat":       a.chat,
		"POST /api/generate":   a.generate,
		"POST /api/embed":      a.embed,
		"POST /api/embeddings": a.embeddingsLegacy,
		"POST /api/pull":       a.noPull,
		"POST /api/push":       a.noPull,
		"POST /api/create":     a.noPull,
		"POST /api/copy":       a.copyModel,
		"DELETE /api/delete":   a.deleteModel,
	} {
		srv.Route(pattern, h, writeError)
	}
}

// writeError writes Ollama's error shape.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// statusOf maps a wire error to Ollama's status and words.
func statusOf(err error, model string) (int, string) {
	status, msg := httpapi.WireStatus(err)
	if status == http.StatusNotFound {
		msg = fmt.Sprintf("model %q not found: copy its GGUF file into models_dir (%s)", model, msg)
	}
	return status, msg
}

func writeWireError(w http.ResponseWriter, err error, model string) {
	status, msg := statusOf(err, model)
	writeError(w, status, msg)
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "invalid request body: "+err.Error())
		return false
	}
	return true
}

func (a *API) root(w http.ResponseWriter, r *http.Request, _ ipc.Peer) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("Ollama is running"))
}

func (a *API) version(w http.ResponseWriter, r *http.Request, _ ipc.Peer) {
	writeJSON(w, http.StatusOK, map[string]string{"version": Version})
}

// modelDetails is Ollama's details object.
type modelDetails struct {
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

type listModel struct {
	Name       string       `json:"name"`
	Model      string       `json:"model"`
	ModifiedAt time.Time    `json:"modified_at,omitzero"`
	Size       int64        `json:"size"`
	Digest     string       `json:"digest"`
	Details    modelDetails `json:"details"`
	ExpiresAt  *time.Time   `json:"expires_at,omitempty"`
	SizeVRAM   *int64       `json:"size_vram,omitempty"`
	Context    int          `json:"context_length,omitempty"`
}

// tagged writes a name as Ollama lists it: with a tag (":latest").
func tagged(name string) string {
	if strings.Contains(name, ":") {
		return name
	}
	return name + ":latest"
}

// entry describes one model of the list. The digest stands for the file
// (its path, size and time), not a hash of its bytes: hashing gigabytes
// on every list would be a cost no client needs.
func entry(m wire.ModelEntry) listModel {
	l := listModel{Name: tagged(m.Name), Model: tagged(m.Name), Size: m.Size, Details: modelDetails{Format: "gguf"}}
	if st, err := os.Stat(m.Path); err == nil {
		l.ModifiedAt = st.ModTime().UTC()
		sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", m.Path, st.Size(), st.ModTime().UnixNano()))
		l.Digest = hex.EncodeToString(sum[:])
	}
	if m.Info != nil {
		l.Details.Family, l.Details.Families = m.Info.Arch, []string{m.Info.Arch}
		l.Context = m.Info.Context
	}
	return l
}

func (a *API) tags(w http.ResponseWriter, r *http.Request, _ ipc.Peer) {
	out := []listModel{}
	for _, m := range a.b.Models() {
		l := entry(m)
		l.Context = 0
		out = append(out, l)
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": out})
}

// forever is the expiry Ollama shows for a model that never unloads.
var forever = time.Date(2318, 1, 1, 0, 0, 0, 0, time.UTC)

func (a *API) ps(w http.ResponseWriter, r *http.Request, _ ipc.Peer) {
	out := []listModel{}
	for _, m := range a.b.Models() {
		if m.State != "loaded" {
			continue
		}
		l := entry(m)
		l.Size = m.Bytes
		exp := forever
		if m.ExpiresAt != 0 {
			exp = time.Unix(m.ExpiresAt, 0).UTC()
		} else if m.KeepAlive >= 0 && m.Requests == 0 {
			exp = time.Now().UTC()
		} else if m.KeepAlive >= 0 {
			exp = time.Now().Add(time.Duration(m.KeepAlive * float64(time.Second))).UTC()
		}
		vram := int64(0)
		l.ExpiresAt, l.SizeVRAM = &exp, &vram
		out = append(out, l)
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": out})
}

// find is the listed model a name means (a name or alias, ":latest" on
// or off, any case), as the daemon resolves it.
func (a *API) find(name string) (wire.ModelEntry, bool) {
	base := strings.TrimSuffix(name, ":latest")
	for _, m := range a.b.Models() {
		for _, n := range append([]string{m.Name}, m.Aliases...) {
			if strings.EqualFold(n, name) || strings.EqualFold(n, base) || strings.EqualFold(strings.TrimSuffix(n, ":latest"), base) {
				return m, true
			}
		}
	}
	return wire.ModelEntry{}, false
}

func (a *API) show(w http.ResponseWriter, r *http.Request, _ ipc.Peer) {
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"` // the older field
	}
	if !decode(w, r, &req) {
		return
	}
	name := req.Model
	if name == "" {
		name = req.Name
	}
	m, ok := a.find(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("model %q not found", name))
		return
	}
	l := entry(m)
	caps := []string{"completion"}
	info := map[string]any{}
	if m.Info != nil && (m.Info.EmbedOnly || m.Info.Pooling != "") {
		caps = []string{"embedding"} // as Ollama: a file that declares pooling is an embedding model
	}
	if m.Info != nil && !m.Info.EmbedOnly && m.Info.Pooling != "" {
		caps = append(caps, "completion") // a decoder with pooling still generates here
	}
	if m.Info != nil {
		info["general.architecture"] = m.Info.Arch
		info[m.Info.Arch+".context_length"] = m.Info.Context
		info[m.Info.Arch+".embedding_length"] = m.Info.Dim
		info[m.Info.Arch+".block_count"] = m.Info.Layers
		if m.Info.ToolFormat != "" {
			caps = append(caps, "tools")
		}
		if m.Info.Thinking {
			caps = append(caps, "thinking")
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"modelfile": "# batchd serves " + m.Path + "\nFROM " + m.Path + "\n",
		"parameters": "", "template": "", "details": l.Details, "model_info": info, "capabilities": caps,
		"modified_at": l.ModifiedAt})
}

func (a *API) noPull(w http.ResponseWriter, r *http.Request, _ ipc.Peer) {
	writeError(w, http.StatusBadRequest, "batchd does not download or build models: copy a GGUF file into the "+
		"models directory (models_dir, /var/lib/batchd/models in the package) and it is served under its file name")
}

// deleteModel removes a models_dir file (admins only).
func (a *API) deleteModel(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"`
	}
	if !decode(w, r, &req) {
		return
	}
	name := cmp.Or(req.Model, req.Name)
	if err := a.b.DeleteModel(p, name); err != nil {
		writeWireError(w, err, name)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// copyModel gives a model another name in models_dir (admins only).
func (a *API) copyModel(w http.ResponseWriter, r *http.Request, p ipc.Peer) {
	var req struct {
		Source      string `json:"source"`
		Destination string `json:"destination"`
	}
	if !decode(w, r, &req) {
		return
	}
	if err := a.b.CopyModel(p, req.Source, req.Destination); err != nil {
		writeWireError(w, err, req.Source)
		return
	}
	w.WriteHeader(http.StatusOK)
}
