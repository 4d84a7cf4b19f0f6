#include <ember/ember.h>
#include <iostream>
int main() {
  std::cout << std::boolalpha << ember::cuda::is_available() << "\n";   // false on a machine without a GPU
  std::cout << ember::mps::is_available() << "\n";                      // false off Apple silicon
  auto x = ember::tensor({1.f, 2.f, 3.f});
  std::cout << x << " " << x.device() << "\n";                          // tensor([1., 2., 3.]) cpu
  ember::Device my_device = ember::cuda::is_available() ? ember::Device("cuda")
                          : ember::mps::is_available()  ? ember::Device("mps")
                                                        : ember::Device("cpu");
  std::cout << "Device: " << my_device << "\n";                         // Device: cpu
  auto y = ember::rand({2, 2}, my_device);
  std::cout << y << "\n";                                               // tensor([[0.xxxx, 0.xxxx],\n        [0.xxxx, 0.xxxx]])
  x = x.to(ember::Device("cpu"));
  std::cout << x << " " << x.device() << "\n";
  x = x.to(my_device);
  std::cout << x << " " << x.device() << "\n";                          // on a GPU: tensor([1., 2., 3.], device='cuda:0') cuda:0
  std::cout << ember::best_device() << "\n";                            // the same choice as the chain above
}
