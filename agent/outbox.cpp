// Outbox: memory window plus spill file.
#include "agent/outbox.hpp"

#include <stdexcept>

namespace tessera::agent {

Outbox::Outbox(std::string spill_path, int64_t memory_bytes, int64_t disk_bytes)
    : spill_path_(std::move(spill_path)), memory_limit_(memory_bytes), disk_limit_(disk_bytes) {}

Outbox::~Outbox() {
  if (spill_) std::fclose(spill_);
}

void Outbox::push(std::string frame) {
  memory_used_ += static_cast<int64_t>(frame.size());
  memory_.emplace_back(++last_seq_, std::move(frame));
  spill_what_fits();
}

void Outbox::spill_what_fits() {
  try {
    while (memory_used_ > memory_limit_ && memory_.size() > 1 &&
           spill_end_ + static_cast<int64_t>(memory_.front().second.size()) <= disk_limit_)
      spill_oldest();
    spill_error_.clear();
  } catch (const std::runtime_error& e) {
    // A full disk: the frame stays in memory (spill_oldest moves it only once written), the outbox
    // reads as full, so the producer pauses; the next push or acknowledgement tries again.
    spill_error_ = e.what();
  }
}

void Outbox::spill_oldest() {
  if (!spill_) {
    spill_ = std::fopen(spill_path_.c_str(), "w+b");
    if (!spill_) throw std::runtime_error("cannot create the outbox spill file " + spill_path_);
    spill_end_ = 0;
  }
  auto& [seq, frame] = memory_.front();
  if (std::fseek(spill_, spill_end_, SEEK_SET) != 0 || std::fwrite(frame.data(), 1, frame.size(), spill_) != frame.size())
    throw std::runtime_error("cannot write the outbox spill file " + spill_path_);
  spilled_[seq] = {spill_end_, static_cast<int64_t>(frame.size())};
  spill_end_ += static_cast<int64_t>(frame.size());
  memory_used_ -= static_cast<int64_t>(frame.size());
  memory_.pop_front();
}

void Outbox::acknowledge(int64_t seq) {
  if (seq <= acked_) return;
  if (seq > last_seq_) seq = last_seq_;
  acked_ = seq;
  while (!spilled_.empty() && spilled_.begin()->first <= seq) spilled_.erase(spilled_.begin());
  while (!memory_.empty() && memory_.front().first <= seq) {
    memory_used_ -= static_cast<int64_t>(memory_.front().second.size());
    memory_.pop_front();
  }
  if (spilled_.empty() && spill_) {  // everything on disk is acknowledged: start the file again
    std::fclose(spill_);
    spill_ = nullptr;
    spill_end_ = 0;
    std::remove(spill_path_.c_str());
  }
  spill_what_fits();
}

std::string Outbox::frame(int64_t seq) const {
  if (seq <= acked_ || seq > last_seq_)
    throw std::out_of_range("outbox holds sequence numbers " + std::to_string(acked_ + 1) + ".." +
                            std::to_string(last_seq_) + ", not " + std::to_string(seq));
  if (!memory_.empty() && seq >= memory_.front().first) return memory_[static_cast<size_t>(seq - memory_.front().first)].second;
  const auto it = spilled_.find(seq);
  if (it == spilled_.end()) throw std::logic_error("outbox lost sequence number " + std::to_string(seq));
  std::fflush(spill_);
  std::string frame(static_cast<size_t>(it->second.size), '\0');
  if (std::fseek(spill_, it->second.offset, SEEK_SET) != 0 ||
      std::fread(frame.data(), 1, frame.size(), spill_) != frame.size())
    throw std::runtime_error("cannot read the outbox spill file " + spill_path_);
  return frame;
}

}  // namespace tessera::agent
