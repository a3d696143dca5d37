package prepare

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// splitKeywords are the names the datasets library recognises for a
// split in a file or folder name.
var splitKeywords = map[string][]string{
	"train":      {"train", "training"},
	"validation": {"validation", "valid", "dev", "val"},
	"test":       {"test", "testing", "eval", "evaluation"},
}

// splitFiles picks a split's data files of a repository as load_dataset
// does: from the dataset card's `configs:` when it has them, else by the
// split's name in a file or folder name, and every data file is "train"
// when no name marks a split. gym reads parquet, so other formats are
// refused by name.
func splitFiles(paths []string, readme []byte, config, split string) ([]string, error) {
	chosen, err := SplitDataFiles(paths, readme, config, split)
	if err != nil {
		return nil, err
	}
	for _, p := range chosen {
		if !strings.HasSuffix(p, ".parquet") {
			return nil, fmt.Errorf("split %s has %s; gym reads the Hub's parquet files only", split, p)
		}
	}
	return chosen, nil
}

// SplitDataFiles picks a split's data files of a repository, whatever
// their format, as load_dataset does (see splitFiles), sorted.
func SplitDataFiles(paths []string, readme []byte, config, split string) ([]string, error) {
	patterns, err := cardPatterns(readme, config, split)
	if err != nil {
		return nil, err
	}
	var chosen []string
	if patterns != nil {
		for _, p := range paths {
			for _, re := range patterns {
				if re.MatchString(p) {
					chosen = append(chosen, p)
					break
				}
			}
		}
	} else {
		var data []string
		for _, p := range paths {
			if isDataFile(p) {
				data = append(data, p)
			}
		}
		marked := false
		for _, p := range data {
			if s := splitOf(p); s != "" {
				marked = true
				if s == split {
					chosen = append(chosen, p)
				}
			}
		}
		if !marked && split == "train" {
			chosen = data
		}
	}
	if len(chosen) == 0 {
		return nil, fmt.Errorf("no data files for config %s, split %s", config, split)
	}
	slices.Sort(chosen)
	return chosen, nil
}

var dataExtensions = []string{".parquet", ".csv", ".json", ".jsonl", ".tsv", ".txt", ".arrow", ".zip", ".tar", ".gz"}

// isDataFile is a file load_dataset would read: a data extension, and no
// file or folder on its path hidden by a leading "." or "_".
func isDataFile(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, ".") || strings.HasPrefix(seg, "_") {
			return false
		}
	}
	return slices.Contains(dataExtensions, path.Ext(p))
}

var nameDelims = regexp.MustCompile(`[-._ 0-9/]+`)

// splitOf is the split a path's folder or file name marks, "" for none.
func splitOf(p string) string {
	for _, word := range nameDelims.Split(strings.TrimSuffix(p, path.Ext(p)), -1) {
		for split, words := range splitKeywords {
			if slices.Contains(words, strings.ToLower(word)) {
				return split
			}
		}
	}
	return ""
}

// cardPatterns reads the data_files of config's split from a dataset
// card's YAML header; nil when the card declares no configs.
func cardPatterns(readme []byte, config, split string) ([]*regexp.Regexp, error) {
	files, declared, err := cardDataFiles(readme, config)
	if err != nil || !declared {
		return nil, err
	}
	if files == nil {
		return nil, fmt.Errorf("README.md declares no config %s", config)
	}
	globs, err := splitGlobs(files, split)
	if err != nil {
		return nil, fmt.Errorf("README.md config %s: %w", config, err)
	}
	res := []*regexp.Regexp{} // declared, even with no pattern for this split
	for _, g := range globs {
		res = append(res, globRegexp(g))
	}
	return res, nil
}

// cardDataFiles finds config's data_files in a dataset card's YAML
// header (a config without a name is "default"); declared tells whether
// the card declares any config, files is nil when it does not declare
// this one.
func cardDataFiles(readme []byte, config string) (files *yaml.Node, declared bool, err error) {
	header, ok := frontMatter(readme)
	if !ok {
		return nil, false, nil
	}
	var card struct {
		Configs []struct {
			Name      string    `yaml:"config_name"`
			DataFiles yaml.Node `yaml:"data_files"`
		} `yaml:"configs"`
	}
	if err := yaml.Unmarshal(header, &card); err != nil {
		return nil, false, fmt.Errorf("README.md's YAML header: %w", err)
	}
	for _, c := range card.Configs {
		if c.Name == "" {
			c.Name = "default"
		}
		if c.Name == config {
			return &c.DataFiles, true, nil
		}
	}
	return nil, len(card.Configs) > 0, nil
}

// splitGlobs reads data_files: a pattern or list of them (all "train"),
// or a list of {split, path} with path a pattern or list.
func splitGlobs(n *yaml.Node, split string) ([]string, error) {
	patterns := func(n *yaml.Node) ([]string, error) {
		switch n.Kind {
		case yaml.ScalarNode:
			return []string{n.Value}, nil
		case yaml.SequenceNode:
			var out []string
			for _, it := range n.Content {
				if it.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("line %d: a data_files path is a string", it.Line)
				}
				out = append(out, it.Value)
			}
			return out, nil
		}
		return nil, fmt.Errorf("line %d: data_files path is neither a string nor a list", n.Line)
	}
	if n.Kind == yaml.ScalarNode || (n.Kind == yaml.SequenceNode && len(n.Content) > 0 && n.Content[0].Kind == yaml.ScalarNode) {
		if split != "train" {
			return nil, nil
		}
		return patterns(n)
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: data_files is neither a pattern nor a list", n.Line)
	}
	var out []string
	for _, it := range n.Content {
		var entry struct {
			Split string    `yaml:"split"`
			Path  yaml.Node `yaml:"path"`
		}
		if err := it.Decode(&entry); err != nil {
			return nil, fmt.Errorf("line %d: %w", it.Line, err)
		}
		if entry.Split == split {
			p, err := patterns(&entry.Path)
			if err != nil {
				return nil, err
			}
			out = append(out, p...)
		}
	}
	return out, nil
}

func frontMatter(readme []byte) ([]byte, bool) {
	readme = bytes.ReplaceAll(readme, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(readme, []byte("---\n"))
	if !ok {
		return nil, false
	}
	header, _, ok := bytes.Cut(rest, []byte("\n---"))
	return header, ok
}

// globRegexp is an fsspec glob as the Hub's file system matches it: * and
// ? within a name, ** across folders.
func globRegexp(glob string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; {
		case strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// DefaultConfig is the config load_dataset reads when given none: the one
// the card marks `default: true`, else its only one, else "default"; a
// card with several configs and no default one is an error listing them,
// as the datasets library's.
func DefaultConfig(readme []byte) (string, error) {
	header, ok := frontMatter(readme)
	if !ok {
		return "default", nil
	}
	var card struct {
		Configs []struct {
			Name    string `yaml:"config_name"`
			Default bool   `yaml:"default"`
		} `yaml:"configs"`
	}
	if err := yaml.Unmarshal(header, &card); err != nil {
		return "", fmt.Errorf("README.md's YAML header: %w", err)
	}
	var names []string
	for _, c := range card.Configs {
		if c.Name == "" {
			c.Name = "default"
		}
		if c.Default {
			return c.Name, nil
		}
		names = append(names, c.Name)
	}
	switch {
	case len(names) == 1:
		return names[0], nil
	case len(names) == 0 || slices.Contains(names, "default"):
		return "default", nil
	}
	return "", fmt.Errorf("Config name is missing. Please pick one among the available configs: %s", "['"+strings.Join(names, "', '")+"']")
}

// CardSplits lists the splits config's data_files declares in a card, in
// its order ("train" alone for bare patterns); nil when the card declares
// no configs, so splits come from file names.
func CardSplits(readme []byte, config string) ([]string, error) {
	n, _, err := cardDataFiles(readme, config)
	if err != nil || n == nil {
		return nil, err
	}
	if n.Kind == yaml.ScalarNode || (n.Kind == yaml.SequenceNode && len(n.Content) > 0 && n.Content[0].Kind == yaml.ScalarNode) {
		return []string{"train"}, nil
	}
	var splits []string
	for _, it := range n.Content {
		var entry struct {
			Split string `yaml:"split"`
		}
		if err := it.Decode(&entry); err != nil {
			return nil, fmt.Errorf("README.md config %s: line %d: %w", config, it.Line, err)
		}
		if entry.Split != "" && !slices.Contains(splits, entry.Split) {
			splits = append(splits, entry.Split)
		}
	}
	return splits, nil
}
