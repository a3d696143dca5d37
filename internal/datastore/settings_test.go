package datastore

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/nemo-gym-go/gym/internal/config"
	"github.com/nemo-gym-go/gym/internal/config/configtest"
)

var uploadKeys = []string{"+hf_organization=org", "+hf_collection_name='My Sets'", "+hf_collection_slug=abc", "+input_jsonl_fpath=data/train.jsonl",
	"+resource_config_path=resources_servers/mcqa/configs/mcqa.yaml"}

func TestReadHFUpload(t *testing.T) {
	base := HFUpload{Organization: "org", CollectionName: "My Sets", CollectionSlug: "abc", Input: "data/train.jsonl",
		ResourceConfig: "resources_servers/mcqa/configs/mcqa.yaml", ResourceConfigFile: "resources_servers/mcqa/configs/mcqa.yaml",
		Prefix: "Nemotron-RL", Split: "train"}
	tests := []struct {
		name    string
		tokens  []string
		want    func(*HFUpload)
		missing string
	}{
		{name: "NeMo Gym's defaults", want: func(*HFUpload) {}},
		{name: "every key", tokens: []string{"+dataset_name=mine", "+split=validation", "+revision=v1", "+commit_message=m", "+commit_description=d", "+create_pr=true", "+hf_dataset_prefix=X"},
			want: func(u *HFUpload) {
				u.DatasetName, u.Split, u.Revision, u.Message, u.Description, u.CreatePR, u.Prefix = "mine", "validation", "v1", "m", "d", true, "X"
			}},
		{name: "an empty prefix is no prefix", tokens: []string{"+hf_dataset_prefix=''"}, want: func(u *HFUpload) { u.Prefix = "" }},
		{name: "the required keys are named together", tokens: []string{"~hf_organization", "~input_jsonl_fpath"}, missing: "hf_organization, input_jsonl_fpath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadHFUpload(configtest.Settings(t, append(append([]string(nil), uploadKeys...), tt.tokens...)...))
			if tt.missing != "" {
				var missing *config.MissingSettingsError
				if !errors.As(err, &missing) || !strings.Contains(err.Error(), tt.missing) {
					t.Fatalf("err = %v, want the missing %s", err, tt.missing)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := base
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestReadHFDownload(t *testing.T) {
	got, err := ReadHFDownload(configtest.Settings(t, "+repo_id=o/r", "+split=test", "+output_dirpath=out", "+artifact_fpath=a.jsonl", "+output_fpath=f.jsonl"))
	want := HFDownload{Repo: "o/r", Split: "test", OutputDir: "out", Artifact: "a.jsonl", Output: "f.jsonl"}
	if err != nil || got != want {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	var missing *config.MissingSettingsError
	if _, err := ReadHFDownload(configtest.Settings(t, "+split=test")); !errors.As(err, &missing) || !strings.Contains(err.Error(), "repo_id") {
		t.Errorf("err = %v, want repo_id missing", err)
	}
	if _, err := ReadHFDownload(configtest.Settings(t, "+repo_id=[1, 2]")); err == nil || !strings.Contains(err.Error(), "repo_id must be a string") {
		t.Errorf("err = %v, want repo_id's type named", err)
	}
}
