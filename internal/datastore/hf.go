// Package datastore moves NeMo Gym's JSONL datasets to and from their
// stores as NeMo Gym 0.7.0's `gym dataset` commands do: the Hugging Face
// Hub (through internal/hub), and GitLab's model registry (through the
// MLflow REST API GitLab serves). Each operation prints NeMo Gym's own
// "[Nemo-Gym] - ..." lines, and fails with a non-zero exit where NeMo Gym
// printed a message and returned.
package datastore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/pyyaml"
	"github.com/nemo-gym-go/gym/internal/config/tree"
	"github.com/nemo-gym-go/gym/internal/hub"
	"github.com/nemo-gym-go/gym/internal/jsonl"
	"github.com/nemo-gym-go/gym/internal/prepare"
)

// Splits are the split names NeMo Gym's dataset configs accept.
var Splits = []string{"train", "validation", "test"}

// CheckSplit refuses a split NeMo Gym's Literal would refuse.
func CheckSplit(key, split string) error {
	for _, s := range Splits {
		if s == split {
			return nil
		}
	}
	return fmt.Errorf("%s=%q: must be one of train, validation, test", key, split)
}

// HFUpload is one `gym dataset upload` to the Hub.
type HFUpload struct {
	Organization, CollectionName, CollectionSlug string
	// DatasetName defaults to the resources server's name.
	DatasetName string
	// Input is the JSONL file; it lands in the repository by its base name.
	Input string
	// ResourceConfig is resource_config_path as given: its second path
	// segment names the resources server; ResourceConfigFile is the file.
	ResourceConfig, ResourceConfigFile string
	// Prefix is hf_dataset_prefix ("" for none).
	Prefix      string
	Split       string
	CreatePR    bool
	Revision    string
	Message     string
	Description string
}

// ReadHFUpload reads an upload's NeMo Gym keys from a resolved config,
// with NeMo Gym's defaults (prefix Nemotron-RL, split train). Input and
// ResourceConfigFile are left as given, for the caller to anchor.
func ReadHFUpload(s config.Settings) (HFUpload, error) {
	u := HFUpload{Prefix: "Nemotron-RL", Split: "train"}
	var input, split string
	if err := s.Strings([]string{"hf_organization", "hf_collection_name", "hf_collection_slug", "input_jsonl_fpath", "resource_config_path"},
		map[string]*string{"hf_organization": &u.Organization, "hf_collection_name": &u.CollectionName, "hf_collection_slug": &u.CollectionSlug,
			"dataset_name": &u.DatasetName, "input_jsonl_fpath": &input, "resource_config_path": &u.ResourceConfig, "split": &split,
			"revision": &u.Revision, "commit_message": &u.Message, "commit_description": &u.Description}); err != nil {
		return HFUpload{}, err
	}
	u.Input, u.ResourceConfigFile = input, u.ResourceConfig
	if split != "" {
		u.Split = split
	}
	if n, err := s.Node("hf_dataset_prefix"); err != nil {
		return HFUpload{}, err
	} else if n != nil {
		if u.Prefix, err = s.String("hf_dataset_prefix"); err != nil {
			return HFUpload{}, err
		}
	}
	var err error
	if u.CreatePR, err = s.Bool("create_pr"); err != nil {
		return HFUpload{}, err
	}
	return u, nil
}

// RepoID is the repository NeMo Gym names for the upload:
// org/<prefix>-<domain>-<dataset name>, the domain that of the config's
// first resources server, lowercased.
func (u HFUpload) RepoID() (string, error) {
	repo, _, err := u.names()
	return repo, err
}

// names are the repository and the dataset name (dataset_name, else the
// resources server's).
func (u HFUpload) names() (repo, name string, err error) {
	b, err := os.ReadFile(u.ResourceConfigFile)
	if err != nil {
		return "", "", fmt.Errorf("resource_config_path: %w", err)
	}
	root, err := pyyaml.Load(b, u.ResourceConfigFile)
	if err != nil {
		return "", "", err
	}
	domain := ""
	if d := serverDomain(root); d != "" {
		domain = strings.ToLower(d) + "-"
	}
	parts := strings.Split(u.ResourceConfig, "/")
	if len(parts) < 2 || parts[1] == "" {
		return "", "", fmt.Errorf("resource_config_path=%q: NeMo Gym names the dataset after the second part of this path (resources_servers/<name>/configs/<name>.yaml)", u.ResourceConfig)
	}
	name = u.DatasetName
	if name == "" {
		name = parts[1]
	}
	prefix := ""
	if u.Prefix != "" {
		prefix = u.Prefix + "-"
	}
	return u.Organization + "/" + prefix + domain + name, name, nil
}

// serverDomain is NeMo Gym's visit_resources_server: the first mapping
// entry of the file, its resources_servers block, that block's first
// server, and that server's domain.
func serverDomain(root *tree.Node) string {
	n := root
	for level := 1; level <= 3; level++ {
		if n == nil || n.Kind != tree.Map {
			return ""
		}
		var next *tree.Node
		for _, e := range n.Entries {
			if level == 2 && e.Key != "resources_servers" {
				continue
			}
			if e.Value != nil && e.Value.Kind == tree.Map {
				next = e.Value
				break
			}
		}
		n = next
	}
	if n == nil || n.Kind != tree.Map {
		return ""
	}
	if d := n.Get("domain"); d != nil && d.Kind == tree.String {
		return d.Str
	}
	return ""
}

// CollectionID is the slug NeMo Gym builds: org/<name, lowercased,
// spaces as dashes>-<slug>.
func (u HFUpload) CollectionID() string {
	return u.Organization + "/" + strings.ReplaceAll(strings.ToLower(u.CollectionName), " ", "-") + "-" + u.CollectionSlug
}

// CheckJSONL makes sure every line of a training file is a JSON object
// with responses_create_params, naming the first lines that are not.
func CheckJSONL(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var bad []string
	nbad := 0
	for line := 1; ; line++ {
		text, err := r.ReadBytes('\n')
		if len(text) == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			return err
		}
		var row map[string]json.RawMessage
		problem := ""
		if jerr := json.Unmarshal(text, &row); jerr != nil {
			problem = "not a JSON object"
		} else if _, ok := row["responses_create_params"]; !ok {
			problem = "no responses_create_params"
		}
		if problem != "" {
			nbad++
			if len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("%s:%d: %s", file, line, problem))
			}
		}
		if err == io.EOF {
			break
		}
	}
	if nbad == 0 {
		return nil
	}
	more := ""
	if nbad > len(bad) {
		more = fmt.Sprintf("\n  ... and %d more", nbad-len(bad))
	}
	return fmt.Errorf("JSONL file format check failed: %d lines of a train split lack responses_create_params:\n  %s%s",
		nbad, strings.Join(bad, "\n  "), more)
}

// UploadHF runs NeMo Gym's upload: check a train file, create the
// private repository, put it in the collection, then commit the file and
// the dataset card (tagged rl-environment and nemo-gym) together, on the
// head the card was read from.
func UploadHF(ctx context.Context, c *hub.Client, u HFUpload, out io.Writer) error {
	repo, name, err := u.names()
	if err != nil {
		return err
	}
	collection := u.CollectionID()
	if _, err := os.Stat(u.Input); err != nil {
		return fmt.Errorf("input_jsonl_fpath: %w", err)
	}
	if u.Split == "train" {
		if err := CheckJSONL(u.Input); err != nil {
			return err
		}
	}
	if _, err := c.CreateDatasetRepo(ctx, repo, true); err != nil {
		var se *hub.StatusError
		if !u.CreatePR || !errors.As(err, &se) || se.Status != http.StatusForbidden {
			return fmt.Errorf("creating the repo %s: %w", repo, err)
		}
		fmt.Fprintf(out, "[Nemo-Gym] - Repo '%s' exists (no create permission, will create PR)\n", repo)
	} else {
		fmt.Fprintf(out, "[Nemo-Gym] - Repo '%s' is ready for use\n", repo)
	}
	items, err := c.CollectionItems(ctx, collection)
	if err != nil {
		return fmt.Errorf("adding to the collection: %w", err)
	}
	in := false
	for _, it := range items {
		if strings.EqualFold(it.ID, repo) && it.Type == "dataset" {
			in = true
		}
	}
	if in {
		fmt.Fprintf(out, "[Nemo-Gym] - Dataset '%s' under Repo '%s' is already in Collection '%s'\n", name, repo, collection)
	} else {
		if err := c.AddCollectionItem(ctx, collection, repo); err != nil {
			return fmt.Errorf("adding to the collection: %w", err)
		}
		fmt.Fprintf(out, "[Nemo-Gym] - Dataset '%s' added to collection '%s'\n", repo, collection)
	}
	parent, err := c.RepoSHA(ctx, repo, u.Revision)
	if err != nil {
		return fmt.Errorf("uploading: %w", err)
	}
	var readme []byte
	p, err := c.Download(ctx, c.ResolveURL(repo, parent, "README.md"))
	var se *hub.StatusError
	switch {
	case err == nil:
		if readme, err = os.ReadFile(p); err != nil {
			return err
		}
	case errors.As(err, &se) && se.Status == http.StatusNotFound:
	default:
		return fmt.Errorf("reading the dataset card: %w", err)
	}
	card, err := TagCard(readme, "rl-environment", "nemo-gym")
	if err != nil {
		return fmt.Errorf("%s's README.md: %w", repo, err)
	}
	base := filepath.Base(u.Input)
	msg := u.Message
	if msg == "" {
		msg = "Upload " + base
	}
	res, err := c.Commit(ctx, hub.CommitRequest{Repo: repo, Revision: u.Revision, ParentCommit: parent, Summary: msg,
		Description: u.Description, CreatePR: u.CreatePR,
		Files: []hub.CommitFile{{PathInRepo: base, Local: u.Input}, {PathInRepo: "README.md", Content: card}}})
	if err != nil {
		return fmt.Errorf("uploading: %w", err)
	}
	if u.CreatePR {
		fmt.Fprintf(out, "[Nemo-Gym] - Pull Request created: %s\n", res.PullRequestURL)
	} else {
		fmt.Fprintln(out, "[Nemo-Gym] - Dataset upload successful")
	}
	return nil
}

// TagCard adds tags to a dataset card's YAML header as huggingface_hub's
// DatasetCard does: the header is read and written back as PyYAML would
// (keys in order, null values dropped), the tags appended to its tags
// without duplicates, and the text after the header kept.
func TagCard(readme []byte, tags ...string) ([]byte, error) {
	header, text := splitCard(readme)
	data := tree.NewMap()
	if header != nil {
		n, err := pyyaml.Load(header, "README.md")
		if err != nil {
			return nil, err
		}
		switch {
		case n == nil || n.Kind == tree.Null:
		case n.Kind == tree.Map:
			data = n
		default:
			return nil, errors.New("the card's metadata block is not a mapping")
		}
	}
	for _, k := range data.Keys() {
		if v := data.Get(k); v == nil || v.Kind == tree.Null {
			data.Delete(k)
		}
	}
	var list []*tree.Node
	seen := map[string]bool{}
	add := func(n *tree.Node) {
		key := n.Str
		if n.Kind != tree.String {
			key = fmt.Sprintf("%#v", n)
		}
		if !seen[key] {
			seen[key] = true
			list = append(list, n)
		}
	}
	if old := data.Get("tags"); old != nil {
		if old.Kind == tree.List {
			for _, it := range old.Items {
				add(it)
			}
		} else {
			add(old)
		}
	}
	for _, t := range tags {
		add(tree.NewString(t))
	}
	data.Set("tags", tree.NewList(list...))
	yaml := bytes.TrimSpace(pyyaml.Dump(data, pyyaml.Options{}))
	var out bytes.Buffer
	out.WriteString("---\n")
	out.Write(yaml)
	out.WriteString("\n---\n")
	out.Write(text)
	return out.Bytes(), nil
}

// splitCard splits a card into its YAML header (nil without one) and the
// text after it, as huggingface_hub's REGEX_YAML_BLOCK does.
func splitCard(b []byte) (header, text []byte) {
	s := string(b)
	trimmed := strings.TrimLeft(s, " \t\r\n")
	if !strings.HasPrefix(trimmed, "---") {
		return nil, b
	}
	rest := trimmed[3:]
	nl := len(rest) - len(strings.TrimLeft(rest, "\r\n"))
	if nl == 0 {
		return nil, b
	}
	// One line break ends the opening "---".
	if strings.HasPrefix(rest, "\r\n") {
		rest = rest[2:]
	} else {
		rest = rest[1:]
	}
	for i := 0; i < len(rest); {
		j := strings.IndexAny(rest[i:], "\r\n")
		if j < 0 {
			break
		}
		at := i + j
		after := strings.TrimLeft(rest[at:], "\r\n")
		if strings.HasPrefix(after, "---") {
			tail := strings.TrimLeft(after[3:], " \t")
			if tail == "" || strings.HasPrefix(tail, "\n") || strings.HasPrefix(tail, "\r\n") {
				tail = strings.TrimPrefix(strings.TrimPrefix(tail, "\r\n"), "\n")
				return []byte(rest[:at]), []byte(tail)
			}
		}
		i = at + 1
	}
	return nil, b
}

// HFDownload is one `gym dataset download` from the Hub.
type HFDownload struct {
	Repo string
	// Artifact is a file of the repository to fetch as it is.
	Artifact string
	// Output is the file to write; OutputDir a directory (for an
	// artifact, the file keeps its base name; for splits, <split>.jsonl).
	Output, OutputDir string
	// Split is one split; "" is every split the repository has.
	Split string
}

// ReadHFDownload reads a download's NeMo Gym keys from a resolved config;
// Output and OutputDir are left as given, for the caller to anchor.
func ReadHFDownload(s config.Settings) (HFDownload, error) {
	var d HFDownload
	err := s.Strings([]string{"repo_id"}, map[string]*string{"repo_id": &d.Repo, "artifact_fpath": &d.Artifact,
		"output_fpath": &d.Output, "output_dirpath": &d.OutputDir, "split": &d.Split})
	return d, err
}

// Check refuses what NeMo Gym's DownloadJsonlDatasetHuggingFaceConfig
// refuses, with its words.
func (d HFDownload) Check() error {
	switch {
	case d.OutputDir == "" && d.Output == "":
		return errors.New("Either output_dirpath or output_fpath must be provided")
	case d.OutputDir != "" && d.Output != "":
		return errors.New("Cannot specify both output_dirpath and output_fpath")
	case d.Artifact != "" && d.Split != "":
		return errors.New("Cannot specify both artifact_fpath and split. Use artifact_fpath for targeting a raw file, or split for structured datasets.")
	case d.Output != "" && d.Split == "" && d.Artifact == "":
		return errors.New("When using output_fpath without artifact_fpath, split must be specified. Use output_dirpath to download all splits.")
	}
	if d.Split != "" {
		return CheckSplit("split", d.Split)
	}
	return nil
}

// DownloadHF fetches an artifact as it is, or a split's (or every
// split's) rows as JSONL, as NeMo Gym's download does; a split's files
// are found as the datasets library finds them (prepare.SplitDataFiles).
func DownloadHF(ctx context.Context, c *hub.Client, d HFDownload, out io.Writer) error {
	if err := d.Check(); err != nil {
		return err
	}
	if d.Artifact != "" {
		p, err := c.Download(ctx, c.ResolveURL(d.Repo, "main", d.Artifact))
		if err != nil {
			return notFoundHint(err, fmt.Sprintf("%s has no file %s (check +artifact_fpath, and that the token can see the repo)", d.Repo, d.Artifact))
		}
		dst := d.Output
		if d.OutputDir != "" {
			dst = filepath.Join(d.OutputDir, path.Base(d.Artifact))
		}
		if err := copyFile(p, dst); err != nil {
			return err
		}
		fmt.Fprintf(out, "[Nemo-Gym] - Downloaded %s to: %s\n", d.Artifact, dst)
		return nil
	}
	entries, err := c.Files(ctx, d.Repo, "main")
	if err != nil {
		return notFoundHint(err, fmt.Sprintf("the Hub has no dataset %s (or the token cannot see it)", d.Repo))
	}
	var paths []string
	for _, e := range entries {
		if e.Type == "file" {
			paths = append(paths, e.Path)
		}
	}
	var readme []byte
	if p, err := c.Download(ctx, c.ResolveURL(d.Repo, "main", "README.md")); err == nil {
		readme, _ = os.ReadFile(p)
	} else if !isNotFound(err) {
		return err
	}
	config, err := prepare.DefaultConfig(readme)
	if err != nil {
		return fmt.Errorf("%s: %w (gym reads the default config; fetch another's files with --artifact)", d.Repo, err)
	}
	splits := []string{d.Split}
	if d.Split == "" {
		// Every split, as load_dataset returns them: the card's own, in
		// its order, else the ones file names mark.
		candidates, err := prepare.CardSplits(readme, config)
		if err != nil {
			return fmt.Errorf("%s: %w", d.Repo, err)
		}
		if candidates == nil {
			candidates = Splits
		}
		splits = nil
		for _, s := range candidates {
			if files, _ := prepare.SplitDataFiles(paths, readme, config, s); len(files) > 0 {
				splits = append(splits, s)
			}
		}
		if len(splits) == 0 {
			return fmt.Errorf("%s has no data files of any split", d.Repo)
		}
	}
	for _, split := range splits {
		files, err := prepare.SplitDataFiles(paths, readme, config, split)
		if err != nil {
			return fmt.Errorf("%s: %w", d.Repo, err)
		}
		dst := d.Output
		if dst == "" {
			dst = filepath.Join(d.OutputDir, split+".jsonl")
		}
		if err := writeSplit(ctx, c, d.Repo, files, dst); err != nil {
			return err
		}
		fmt.Fprintf(out, "[Nemo-Gym] - Downloaded %s split to: %s\n", split, dst)
	}
	return nil
}

// writeSplit writes the rows of a split's files to dst, one object a
// line: JSON Lines files' rows as the files hold them, parquet files'
// rows as json.dumps writes them.
func writeSplit(ctx context.Context, c *hub.Client, repo string, files []string, dst string) error {
	var local []string
	for _, f := range files {
		if ext := path.Ext(f); ext != ".jsonl" && ext != ".json" && ext != ".parquet" {
			return fmt.Errorf("%s: the split's data file %s is neither JSON Lines nor parquet; fetch it as it is with --artifact %s", repo, f, f)
		}
		p, err := c.Download(ctx, c.ResolveURL(repo, "main", f))
		if err != nil {
			return err
		}
		local = append(local, p)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return jsonl.WriteFileAtomic(dst, func(w *bufio.Writer) error {
		for i, p := range local {
			copy := copyRows
			if path.Ext(files[i]) == ".parquet" {
				copy = copyParquetRows
			}
			if err := copy(p, files[i], w); err != nil {
				return err
			}
		}
		return nil
	})
}

func copyRows(p, name string, w *bufio.Writer) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for line := 1; ; line++ {
		text, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(text)) > 0 {
			text = bytes.TrimRight(text, "\r\n")
			if !json.Valid(text) || bytes.TrimSpace(text)[0] != '{' {
				return fmt.Errorf("%s:%d: not a JSON object", name, line)
			}
			w.Write(text)
			w.WriteByte('\n')
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func isNotFound(err error) bool {
	var se *hub.StatusError
	return errors.As(err, &se) && se.Status == http.StatusNotFound
}

func notFoundHint(err error, hint string) error {
	var se *hub.StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		e := *se
		e.Hint = hint
		return &e
	}
	return err
}

// copyFile copies src to dst through a temporary file, so dst is never
// half written.
func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return jsonl.WriteFileAtomic(dst, func(w *bufio.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}
