// The training loop with the conv models, the image datasets and the precision switch:
// the CNN learns Fashion-MNIST, bf16 reaches the same accuracy as fp32 on a short run,
// ResNet-8 trains on augmented 3x32x32 data reproducibly, bad combinations are refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>

#include "trainer/comm/local_communicator.hpp"
#include "trainer/data/datasets.hpp"
#include "trainer/models/model_registry.hpp"
#include "trainer/trainer.hpp"

using namespace dlsweep;
using namespace dlsweep::trainer;

namespace {

data::DataSpec test_data_spec(const TrainConfig& c) {
  data::DataSpec ds = data_spec(c);
  if (c.dataset == "fashion-mnist") ds.dir = DLSWEEP_FMNIST_DIR;
  return ds;
}

Result<TrainResult> train(const TrainConfig& c) {
  auto data = data::load_data(test_data_spec(c));
  if (!data) return std::unexpected(data.error());
  comm::LocalCommunicator comm;
  TrainContext ctx;
  ctx.comm = &comm;
  auto t = Trainer::create(c, std::move(*data), ctx);
  if (!t) return std::unexpected(t.error());
  return (*t)->run();
}

TrainConfig cnn_fmnist() {
  TrainConfig c;
  c.model = "cnn";
  c.train_subset = 600;
  c.test_subset = 300;
  c.epochs = 2;
  c.batch_size = 50;
  c.base_batch = 50;
  c.base_lr = 0.05;
  return c;
}

}  // namespace

TEST_CASE("the CNN learns Fashion-MNIST, and bf16 matches fp32 accuracy", "[trainer][models]") {
  TrainConfig c = cnn_fmnist();
  auto fp32 = train(c);
  REQUIRE(fp32);
  REQUIRE(fp32->status == TrainStatus::done);
  c.precision = "bf16";
  auto bf16 = train(c);
  REQUIRE(bf16);
  REQUIRE(bf16->status == TrainStatus::done);
  const double a32 = fp32->metrics["val_acc"], a16 = bf16->metrics["val_acc"];
  INFO("val_acc fp32 " << a32 << " bf16 " << a16);
  CHECK(a32 > 0.6);  // 2 epochs on 600 images; chance is 0.1
  CHECK(std::abs(a16 - a32) < 0.04);
  CHECK(bf16->metrics["val_loss"] == Approx(fp32->metrics["val_loss"]).epsilon(0.1));
  CHECK(bf16->metrics["val_loss"] != fp32->metrics["val_loss"]);  // bf16 really is another arithmetic
}

TEST_CASE("ResNet-8 trains on augmented image data, reproducibly", "[trainer][models]") {
  TrainConfig c;
  c.model = "resnet8";
  c.dataset = "synthetic";
  c.train_subset = 256;
  c.test_subset = 64;
  c.epochs = 2;
  c.batch_size = 32;
  c.base_batch = 32;
  c.base_lr = 0.05;
  c.augment = true;
  auto a = train(c);
  REQUIRE(a);
  REQUIRE(a->status == TrainStatus::done);
  CHECK(a->steps == 16);
  auto b = train(c);
  REQUIRE(b);
  CHECK(a->metrics["val_loss"] == b->metrics["val_loss"]);
  CHECK(a->metrics["train_loss"] == b->metrics["train_loss"]);
  c.augment = false;  // the augmentation changes what is trained on
  auto plain = train(c);
  REQUIRE(plain);
  CHECK(plain->metrics["train_loss"] != a->metrics["train_loss"]);
}

TEST_CASE("the trainer refuses a model and dataset that do not fit", "[trainer][models]") {
  TrainConfig c = cnn_fmnist();
  c.precision = "fp16";
  auto r = train(c);
  REQUIRE_FALSE(r);
  CHECK(r.error().where == "precision");
  c = cnn_fmnist();
  c.dataset = "cifar10";
  c.data_dir = "";
  ::unsetenv("DLSWEEP_CIFAR10_DIR");
  auto d = data::load_data(test_data_spec(c));
  REQUIRE_FALSE(d);
  CHECK(d.error().fix.find("DLSWEEP_CIFAR10_DIR") != std::string::npos);
}
