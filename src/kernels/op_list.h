#pragma once
// The op lists, as X-macros: one place generates the op enums, their names and every backend's
// switch, so adding an op without handling it somewhere fails to compile.

// Unary ops: X(EnumName, "name"). Each has a functor of the same name in elementwise_ops.h.
#define EMBER_UNARY_OPS(X)     \
  X(Neg, "neg")                \
  X(Abs, "abs")                \
  X(Exp, "exp")                \
  X(Log, "log")                \
  X(Sqrt, "sqrt")              \
  X(Rsqrt, "rsqrt")            \
  X(Sin, "sin")                \
  X(Cos, "cos")                \
  X(Tanh, "tanh")              \
  X(Erf, "erf")                \
  X(Sigmoid, "sigmoid")        \
  X(Relu, "relu")              \
  X(Gelu, "gelu")              \
  X(GeluTanh, "gelu")          \
  X(Silu, "silu")              \
  X(LogicalNot, "logical_not") \
  X(IsFinite, "isfinite")      \
  X(IsNan, "isnan")            \
  X(IsInf, "isinf")            \
  X(Floor, "floor")            \
  X(Ceil, "ceil")              \
  X(Round, "round")            \
  X(Trunc, "trunc")            \
  X(Frac, "frac")              \
  X(Sign, "sign")              \
  X(Log1p, "log1p")            \
  X(Expm1, "expm1")            \
  X(Log2, "log2")              \
  X(Log10, "log10")            \
  X(Exp2, "exp2")              \
  X(Reciprocal, "reciprocal")  \
  X(Tan, "tan")                \
  X(Asin, "asin")              \
  X(Acos, "acos")              \
  X(Atan, "atan")              \
  X(Sinh, "sinh")              \
  X(Cosh, "cosh")              \
  X(Asinh, "asinh")            \
  X(Acosh, "acosh")            \
  X(Atanh, "atanh")            \
  X(Erfc, "erfc")              \
  X(Erfinv, "erfinv")          \
  X(Lgamma, "lgamma")          \
  X(Digamma, "digamma")        \
  X(Trigamma, "polygamma")     \
  X(BitwiseNot, "bitwise_not")

// Binary ops whose output dtype equals the computation dtype.
#define EMBER_ARITH_BINARY_OPS(X)            \
  X(Add, "add")                              \
  X(Sub, "sub")                              \
  X(Mul, "mul")                              \
  X(Div, "div")                              \
  X(Maximum, "maximum")                      \
  X(Minimum, "minimum")                      \
  X(Pow, "pow")                              \
  X(ThresholdBackward, "threshold_backward") \
  X(SigmoidBackward, "sigmoid_backward")     \
  X(TanhBackward, "tanh_backward")           \
  X(GeluBackward, "gelu_backward")           \
  X(GeluTanhBackward, "gelu_backward")       \
  X(SiluBackward, "silu_backward")           \
  X(Remainder, "remainder")                  \
  X(Fmod, "fmod")                            \
  X(Atan2, "atan2")                          \
  X(Hypot, "hypot")                          \
  X(BitwiseAnd, "bitwise_and")               \
  X(BitwiseOr, "bitwise_or")                 \
  X(BitwiseXor, "bitwise_xor")               \
  X(LeftShift, "bitwise_left_shift")         \
  X(RightShift, "bitwise_right_shift")

// Binary ops that produce bool.
#define EMBER_COMPARE_BINARY_OPS(X) \
  X(Eq, "eq")                       \
  X(Ne, "ne")                       \
  X(Lt, "lt")                       \
  X(Le, "le")                       \
  X(Gt, "gt")                       \
  X(Ge, "ge")                       \
  X(LogicalAnd, "logical_and")      \
  X(LogicalOr, "logical_or")

#define EMBER_BINARY_OPS(X) EMBER_ARITH_BINARY_OPS(X) EMBER_COMPARE_BINARY_OPS(X)

#define EMBER_REDUCE_OPS(X) \
  X(Sum, "sum")             \
  X(Mean, "mean")           \
  X(Prod, "prod")           \
  X(Max, "max")             \
  X(Min, "min")             \
  X(ArgMax, "argmax")       \
  X(ArgMin, "argmin")       \
  X(Var, "var")

// The running reductions of the scan family (kernels/scan_ops.h), named as PyTorch's functions.
#define EMBER_SCAN_OPS(X)  \
  X(Sum, "cumsum")         \
  X(Prod, "cumprod")       \
  X(Max, "cummax")         \
  X(Min, "cummin")         \
  X(LogSumExp, "logcumsumexp")

// Activations with parameters (kernels/activation_ops.h): X(EnumName, "name"). Each has a forward
// functor Name<C> and a backward functor NameBackward<C> of (grad, input).
#define EMBER_ACTIVATION_OPS(X) \
  X(Elu, "elu")                 \
  X(LeakyRelu, "leaky_relu")    \
  X(Hardtanh, "hardtanh")       \
  X(Softplus, "softplus")       \
  X(Threshold, "threshold")     \
  X(Hardshrink, "hardshrink")   \
  X(Softshrink, "softshrink")   \
  X(Hardsigmoid, "hardsigmoid") \
  X(Hardswish, "hardswish")     \
  X(Mish, "mish")               \
  X(LogSigmoid, "log_sigmoid")
