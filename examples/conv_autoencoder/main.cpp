// conv_autoencoder: a convolutional autoencoder on Fashion-MNIST.
//
//   encoder  [N, 1, 28, 28] --Conv2d(s2)--> [N, 16, 14, 14] --Conv2d(s2)--> [N, 8, 7, 7]
//   decoder  [N, 8, 7, 7] --ConvTranspose2d(s2)--> [N, 16, 14, 14] --ConvTranspose2d(s2)-->
//            [N, 1, 28, 28], then a sigmoid so pixels are in [0, 1] like the inputs.
// The code [8, 7, 7] holds 392 numbers for 784 pixels: the network must compress by half.
//
// Trained with Adam on the reconstruction MSE; every epoch prints the train MSE and the test
// MSE, and at the end a PNG grid shows test images (odd rows) above their reconstructions
// (even rows).
//
//   conv_autoencoder --epochs 3 --out reconstructions.png
//   conv_autoencoder --smoke --limit 512 --epochs 1      (exit 1 unless the loss went down)
#include <png.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/common/command_line.h"
#include "autograd/grad_mode.h"
#include "examples/common/atomic_file.h"
#include "nn/data.h"
#include "nn/nn.h"
#include "nn/optim.h"
#include "ops/ops.h"

using namespace aclgrad;

namespace {

// ConvTranspose2d with stride 2, kernel 3, padding 1 and output_padding 1 exactly doubles H and W
// (the inverse of the Conv2d(3, stride 2, padding 1) that halves them).
std::shared_ptr<nn::Sequential> make_autoencoder() {
  using namespace nn;
  return std::make_shared<Sequential>(
      // encoder
      std::make_shared<Conv2d>(Conv2dOptions(1, 16, 3).stride(2).padding(1)),
      std::make_shared<ReLU>(),
      std::make_shared<Conv2d>(Conv2dOptions(16, 8, 3).stride(2).padding(1)),
      std::make_shared<ReLU>(),
      // decoder
      std::make_shared<ConvTranspose2d>(
          ConvTranspose2dOptions(8, 16, 3).stride(2).padding(1).output_padding(1)),
      std::make_shared<ReLU>(),
      std::make_shared<ConvTranspose2d>(
          ConvTranspose2dOptions(16, 1, 3).stride(2).padding(1).output_padding(1)),
      std::make_shared<Sigmoid>());
}

// The first `limit` rows of a dataset (all of them when limit <= 0); narrow() is a view.
data::TensorDataset take(const data::TensorDataset& d, int64_t limit) {
  if (limit <= 0 || limit >= d.size()) return d;
  return data::TensorDataset(d.data().narrow(0, 0, limit), d.target().narrow(0, 0, limit));
}

// Mean reconstruction MSE over a dataset, without recording a graph.
double evaluate(nn::Module& model, const std::shared_ptr<data::TensorDataset>& set) {
  NoGradGuard no_grad;
  data::DataLoader loader(set, {.batch_size = 256});
  double total = 0;
  for (auto& batch : loader) {
    const Tensor loss = mse_loss(model(batch.data), batch.data);
    total += loss.item<double>() * static_cast<double>(batch.data.size(0));
  }
  return total / static_cast<double>(set->size());
}

// Encodes 8-bit grayscale pixels [height * width] as PNG bytes, in memory.
std::string encode_png(const std::vector<uint8_t>& pixels, int width, int height) {
  std::string bytes;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info || setjmp(png_jmpbuf(png))) {  // libpng reports errors by longjmp-ing here
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("write_png: libpng failed to encode the image");
  }
  png_set_write_fn(
      png, &bytes,
      [](png_structp p, png_bytep data, png_size_t n) {
        static_cast<std::string*>(png_get_io_ptr(p))->append(reinterpret_cast<char*>(data), n);
      },
      nullptr);
  png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < height; ++y)
    png_write_row(png, pixels.data() + static_cast<size_t>(y) * static_cast<size_t>(width));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return bytes;
}

// Writes the PNG atomically (temporary file, fsync, rename): a viewer never sees half a file,
// and a failure leaves the previous image and no temporary behind.
void write_png(const std::string& path, const std::vector<uint8_t>& pixels, int width, int height) {
  examples::write_file_atomically(path, encode_png(pixels, width, height));
}

// A grid of `cols` images per row: inputs [n, 1, 28, 28] on one row, their reconstructions on
// the row below, each pixel drawn as scale x scale, with a 2-pixel gray gap between images.
void save_grid(const std::string& path, const Tensor& inputs, const Tensor& outputs, int cols,
               int scale) {
  const int n = static_cast<int>(inputs.size(0)), side = 28, gap = 2, cell = side * scale + gap;
  const int pair_rows = (n + cols - 1) / cols;
  const int width = cols * cell + gap, height = 2 * pair_rows * cell + gap;
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * static_cast<size_t>(height), 96);
  const std::vector<float> in = inputs.to_vector<float>(), out = outputs.to_vector<float>();
  for (int i = 0; i < n; ++i) {
    for (int which = 0; which < 2; ++which) {  // 0: input, 1: reconstruction
      const std::vector<float>& src = which == 0 ? in : out;
      const int x0 = gap + (i % cols) * cell, y0 = gap + (2 * (i / cols) + which) * cell;
      for (int y = 0; y < side * scale; ++y)
        for (int x = 0; x < side * scale; ++x) {
          const float v =
              src[static_cast<size_t>(i * side * side + (y / scale) * side + x / scale)];
          const float c = v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
          pixels[static_cast<size_t>((y0 + y) * width + x0 + x)] =
              static_cast<uint8_t>(c * 255.f + 0.5f);
        }
    }
  }
  write_png(path, pixels, width, height);
}

}  // namespace

int main(int argc, char** argv) {
  examples::CommandLine cli{
      "Convolutional autoencoder (Conv2d + ConvTranspose2d) on Fashion-MNIST"};
  std::string data_dir = "/usr/share/datasets/fashion-mnist", out = "conv_autoencoder.png";
  int epochs = 3;
  int64_t batch_size = 64, limit = 0, test_limit = 0;
  double lr = 2e-3;
  uint64_t seed = 1;
  bool smoke = false;
  cli.option("--data", data_dir, "Fashion-MNIST directory (IDX files, plain or .gz)");
  cli.option("--epochs", epochs, "Passes over the training set", examples::ValueCheck::positive());
  cli.option("--batch-size", batch_size, "Images per step", examples::ValueCheck::positive());
  cli.option("--lr", lr, "Adam learning rate");
  cli.option("--limit", limit, "Use only the first N training images (0: all)");
  cli.option("--test-limit", test_limit, "Use only the first N test images (0: all)");
  cli.option("--seed", seed, "Seed of the initial weights and the shuffling");
  cli.option("--out", out, "PNG grid of test inputs and their reconstructions");
  cli.flag("--smoke", smoke, "Exit with status 1 unless the last batch loss < the first");
  if (auto status = cli.parse(argc, argv)) return *status;

  try {
    manual_seed(seed);  // layers draw their initial weights from the default generator
    auto model = make_autoencoder();
    std::printf("%s\n", model->to_string().c_str());

    auto train = std::make_shared<data::TensorDataset>(
        take(data::load_mnist(data_dir, /*train=*/true), limit));
    auto test = std::make_shared<data::TensorDataset>(
        take(data::load_mnist(data_dir, /*train=*/false), test_limit));
    std::printf("train %lld images, test %lld images\n", static_cast<long long>(train->size()),
                static_cast<long long>(test->size()));

    optim::Adam opt(model->parameters(), {.lr = lr});
    data::DataLoader loader(
        train, {.batch_size = batch_size, .shuffle = true, .seed = seed, .prefetch = 2});
    double first_loss = -1, last_loss = -1;
    const auto start = std::chrono::steady_clock::now();
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      model->train();
      double sum = 0;
      int64_t seen = 0;
      for (auto& batch : loader) {
        // An autoencoder's target is its input.
        Tensor loss = mse_loss((*model)(batch.data), batch.data);
        opt.zero_grad();
        loss.backward();
        opt.step();
        last_loss = loss.item<double>();
        if (first_loss < 0) first_loss = last_loss;
        sum += last_loss * static_cast<double>(batch.data.size(0));
        seen += batch.data.size(0);
      }
      model->eval();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("epoch %d/%d  train MSE %.5f  test MSE %.5f  (%.1f s)\n", epoch, epochs,
                  sum / static_cast<double>(seen), evaluate(*model, test), seconds);
      std::fflush(stdout);
    }

    // Reconstruct the first 16 test images and save them under their inputs.
    {
      NoGradGuard no_grad;
      const Tensor inputs = test->data().narrow(0, 0, std::min<int64_t>(16, test->size()));
      save_grid(out, inputs, (*model)(inputs), /*cols=*/8, /*scale=*/3);
      std::printf("wrote %s (rows: inputs, reconstructions)\n", out.c_str());
    }

    std::printf("first batch loss %.5f, last batch loss %.5f\n", first_loss, last_loss);
    if (smoke) {
      const bool ok = last_loss < first_loss;
      std::printf("smoke: loss went down: %s\n", ok ? "PASS" : "FAIL");
      return ok ? 0 : 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "conv_autoencoder: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
