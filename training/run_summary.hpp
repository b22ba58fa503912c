#pragma once
// The end of a fine-tuning run as a person reads it: the best model's scores as a small table (a
// row per split, a column per metric), where that model is, how long the run took and the command
// that uses it. The same scores as JSON go to --report.
#include <nlohmann/json.hpp>
#include <string>

namespace xg::training {

// `scores` ({"dev": {"accuracy": ..., ...}, "test": {...}}) as a table: a row per split, a column
// per metric, the example count last.
std::string scores_table(const nlohmann::json& scores);

// `scores` as scores_table, under where the best model is; `use_command`: a program line run on the
// best model, "" for none.
std::string finetune_summary(const nlohmann::json& scores, const std::string& best_dir, double seconds,
                             const std::string& use_command);

// A multi-task run's end: per task (`scores`: name -> {"dev", "dev_at_best_mean"}) its table.
std::string multitask_summary(const nlohmann::json& scores, const std::string& out_dir, double seconds);

}  // namespace xg::training
