import mixdbg_pyb

result = mixdbg_pyb.call_add(2, 3)  # @pycall
print("result", result)
