#pragma once
// The --out directory of a training run, held for the length of the run: created if needed,
// checked writable, locked against a second run, refused when it holds an earlier run's files
// (unless resuming that run, or told to overwrite), and cleared of leftovers of interrupted saves.
#include <string>

namespace xg::training {

class OutputDirectory {
 public:
  // `resuming`: the run continues one saved in `path` (its files are expected there).
  // `overwrite`: a fresh run may replace an earlier run's files there (checkpoint-*, metrics.jsonl,
  // vocab.txt; anything else is left alone). Throws naming the path and what is wrong.
  OutputDirectory(const std::string& path, bool resuming, bool overwrite);
  ~OutputDirectory();  // releases the lock (the kernel does too when the process dies)
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;

  // For a start that failed: removes the directory if this run created it (nothing of value is
  // in it yet), so a mistyped run leaves nothing behind.
  void discard_if_created();

 private:
  std::string path_;
  int fd_ = -1;
  bool created_ = false;
};

}  // namespace xg::training
