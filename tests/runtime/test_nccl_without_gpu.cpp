// Where no GPU is visible (CTest hides any with CUDA_VISIBLE_DEVICES=""), creating an NCCL
// communicator fails at once with a message naming the group and the reason, instead of crashing
// or waiting for peers.
// LibTorch before Qt: Qt's `slots` macro would break LibTorch's headers.
// moc needs none of these (it reads the test class alone); LibTorch would cost it ~20 s.
#ifndef Q_MOC_RUN
#include <ATen/ATen.h>

#include <QtTest/QtTest>

#include "runtime/comm/comm_error.hpp"
#include "runtime/comm/gloo_world.hpp"
#include "runtime/comm/nccl_communicator.hpp"
#include "runtime/launch/local_launcher.hpp"
#endif

using namespace tessera::runtime;

class TestNcclWithoutGpu : public QObject {
  Q_OBJECT
 private slots:
  void creatingAGroupFailsWithAClearMessage() {
    QCOMPARE(cuda_device_count(), 0);
    GlooWorld world(WorldOptions{0, 1, "127.0.0.1", free_local_port(), std::chrono::milliseconds(5000)});
    QElapsedTimer timer;
    timer.start();
    std::string message;
    try {
      make_nccl_group(world, "dp0", {0}, 0);
    } catch (const CommError& e) {
      message = e.what();
    }
    QVERIFY2(message.find("rank 0: NCCL group dp0 needs a CUDA GPU") == 0, message.c_str());
    QVERIFY2(timer.elapsed() < 4000, "the refusal must not wait for a timeout");
    world.finish();
  }

  void aGroupWithoutThisRankIsRefused() {
    GlooWorld world(WorldOptions{0, 1, "127.0.0.1", free_local_port(), std::chrono::milliseconds(5000)});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, make_nccl_group(world, "tp1", {1, 2}, 0));
    world.finish();
  }
};

QTEST_APPLESS_MAIN(TestNcclWithoutGpu)
#include "test_nccl_without_gpu.moc"
