"""torchvision's ResNet-18 trained eagerly: a script's own training step (``model(x)``,
cross-entropy, ``loss.backward()``, SGD with momentum) on a batch of 16 images of 64x64,
200 steps after 20 of warmup: a real library's model whose blocks torch's own
``nn.Sequential`` calls. What the eager history's ``sys.monitoring`` callbacks cost its step
inside their window, as ``hf_train_loop`` measures (``monitoring_us``,
:func:`_common.monitoring_cost`). Needs torchvision."""
import torch
import torchvision
from _common import eager_window, emit

torch.manual_seed(0)
model = torchvision.models.resnet18(num_classes=10).cuda()
loss_fn = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
images = torch.randn(16, 3, 64, 64, device="cuda")
labels = torch.randint(0, 10, (16,), device="cuda")


def body():
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(images), labels)
    loss.backward()
    optimizer.step()


for _ in range(20):
    body()
emit(eager_window(body))
