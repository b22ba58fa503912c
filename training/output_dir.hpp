#pragma once
// The --out directory of a training run, held for the length of the run: created if needed,
// checked writable, locked against a second run, refused when it holds an earlier run's files
// (unless resuming that run, or told to overwrite), and cleared of leftovers of interrupted saves.
#include <string>
#include <vector>

namespace xg::training {

class OutputDirectory {
 public:
  // `resuming`: the run continues one saved in `path` (its files are expected there).
  // `overwrite`: a fresh run may replace an earlier run's files there (checkpoint-*, metrics.jsonl,
  // a trained vocabulary, and with set_aside_models() best/ and tasks/; anything else is left
  // alone): they are set aside in .replaced.PID until drop_replaced() or discard_start(); a start
  // killed before either leaves them there, and the next run in the directory puts them back.
  // A fresh start marks the directory (.starting) until its first step; the next run in a
  // directory so marked removes what that start wrote (metrics.jsonl, a trained vocabulary) when it
  // saved no checkpoint, and puts back what it had set aside.
  // A run marks the directory as a run's (.xgrad-run) when it takes it; --overwrite replaces
  // files only in a directory so marked (or holding a checkpoint with its training state, as runs
  // wrote before the mark): a folder of the user's own files is refused, --overwrite or not.
  // `inputs`: paths the run reads (its flags' values); --overwrite refuses to set aside a file that
  // holds one.
  // Throws naming the path and what is wrong.
  OutputDirectory(const std::string& path, bool resuming, bool overwrite, const std::vector<std::string>& inputs = {});
  ~OutputDirectory();  // releases the lock (the kernel does too when the process dies)
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;

  // Once the task is built (it may have loaded its model from OUT/best): sets aside the earlier
  // run's best/ and tasks/ too, when overwriting.
  void set_aside_models();
  // Once the run has made a step: removes the earlier run's files that --overwrite set aside (and
  // the start's mark).
  void drop_replaced();
  // For a start that failed: removes the directory if this run created it (nothing of value is
  // in it yet), else puts back the earlier run's files --overwrite set aside, so a mistyped run
  // leaves the directory as it found it.
  void discard_start();
  // The files of a start killed before its first step that the constructor removed.
  const std::vector<std::string>& cleared() const { return cleared_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool created_ = false;
  bool marked_here_ = false;  // this start wrote the run mark (a failed start takes it away again)
  void set_aside(bool (*which)(const std::string&));
  bool overwriting_ = false;
  std::string replaced_;  // .replaced.PID while it holds an earlier run's files
  std::vector<std::string> cleared_;
};

}  // namespace xg::training
