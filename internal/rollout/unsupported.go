package rollout

// NeMoGymOnlyKeys are the settings of NeMo Gym's rollout collection
// (SharedRolloutCollectionConfig, RolloutCollectionConfig in 0.7.0) that
// gym does not implement: gym eval run says so when one is set, rather
// than accepting it silently.
var NeMoGymOnlyKeys = []string{
	"require_complete", "max_resident_rollout_tasks", "retain_results_in_memory",
	"count_failure_classes_as_zero", "count_missing_rollouts_as_zero", "route_failures_to_sidecar",
	"environment_routing_mode", "environment_server_name", "environment_server_routes",
	"agent_map", "fan_out", "dispatch_budget_s", "drain_margin_s",
	"dispatch_longest_first", "retry_terminal_timeouts", "retry_invalid_judge_responses",
}
