// A spec's plan on a timeline view, the timeline tests' set-up (test_views, test_hidpi).
#pragma once

#include <QString>

#include "plan_session.hpp"
#include "timeline_model.hpp"
#include "timeline_view.hpp"

namespace tessera::test {

// A spec's plan (an example's file name) on a timeline 1400 × 600 px, fitted to it, with nothing to
// compare; plan() is null where the example did not open. A test that edits the session shows the
// new plan with primary.setPlan.
struct TimelineOf {
  ui::PlanSession session;
  ui::TimelineModel primary, comparison;
  ui::TimelineView view{&primary, &comparison};
  explicit TimelineOf(const char* name) {
    if (!session.open(QStringLiteral(TESSERA_SOURCE_DIR "/resources/examples/%1").arg(QString::fromLatin1(name)), nullptr)) return;
    primary.setPlan(session.plan());
    view.resize(1400, 600);
    view.fitToView();
  }
  const planner::Plan* plan() const { return session.plan().get(); }
};

}  // namespace tessera::test
