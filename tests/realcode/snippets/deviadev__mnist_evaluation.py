# source: https://github.com/DeviaDev/Machine-Learning-Project/blob/2c5027abf1552c3956ccb8cdc16d6a0ae7bd853c/Week3-CNN-MNIST-Dataset/evaluation.py
# reduced excerpt: the lines binding each receiver are kept (the original has no torch import); `# expect:` labels are ours
# ruff: noqa
from sklearn.metrics import confusion_matrix

y_true = []
y_pred = []
with torch.no_grad():
    for images, labels in test_loader:
        images, labels = images.to(device), labels.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)  # expect: fix
        y_true.extend(labels.cpu().numpy())  # expect: fix
        y_pred.extend(predicted.cpu().numpy())  # expect: fix
cm = confusion_matrix(y_true, y_pred)
